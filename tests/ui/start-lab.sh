#!/usr/bin/env bash
# Starts JupyterLab for the browser tests: own port, token, and throwaway state.
# usage: start-lab.sh PORT [extra jupyter lab args...]
set -euo pipefail
port=$1; shift
state=$(mktemp -d "${TMPDIR:-/tmp}/gpudojo-ui-$port-XXXX")
mkdir -p "$state/root" "$state/settings" "$state/workspaces"
# No news pop-up over what the tests look at.
mkdir -p "$state/settings/@jupyterlab/apputils-extension"
echo '{"fetchNews": "false"}' > "$state/settings/@jupyterlab/apputils-extension/notification.jupyterlab-settings"
# Every cell stays in the page (no windowing), so a test can read any cell's output.
mkdir -p "$state/settings/@jupyterlab/notebook-extension"
echo '{"windowingMode": "none"}' > "$state/settings/@jupyterlab/notebook-extension/tracker.jupyterlab-settings"
root_flag=; [ "$(id -u)" = 0 ] && root_flag=--allow-root
exec jupyter lab --no-browser $root_flag \
  --ServerApp.ip=127.0.0.1 --ServerApp.port="$port" --ServerApp.port_retries=0 \
  --IdentityProvider.token=gpudojo-ui-test \
  --ServerApp.root_dir="$state/root" \
  --LabApp.user_settings_dir="$state/settings" \
  --LabApp.workspaces_dir="$state/workspaces" \
  --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate \
  --GPUDojo.data_dir="$state/data" \
  "$@"
