#!/usr/bin/env bash
# Starts a class's JupyterHub for the browser tests, with throwaway state, learners alice and bob
# (tests/python/hub_harness.py writes the config and prepares their homes):
#   deploy  hub.spec.ts: docs/deploy/jupyterhub_config.py; PORT..PORT+4: proxy, hub API, proxy API,
#           alice's and bob's servers
#   class   class-view.spec.ts: the gpudojo-class service of docs/jupyterhub_class_service.py,
#           instructor ines, alice's and bob's progress already written; PORT+5: the service
# usage: start-hub.sh deploy|class PORT PASSWORD [SETUP_TOKEN]   (SETUP_TOKEN: the test's own service token)
set -euo pipefail
kind=$1 port=$2
state=$(mktemp -d "${TMPDIR:-/tmp}/gpudojo-ui-hub-$kind-$port-XXXX")
# It prints `config=PATH` and an `export` for each variable the hub needs.
setup=$(python tests/python/hub_harness.py "$kind" "$state" "$port" "${@:3}")
eval "$setup"
cd "$state"
exec python -m jupyterhub -f "$config"
