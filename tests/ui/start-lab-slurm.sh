#!/usr/bin/env bash
# Starts JupyterLab for the engines' browser tests (slurm.spec.ts, nodes.spec.ts) beside a
# one-host Slurm cluster of its own (tests/python/slurm_cluster.py serve), with SLURM_CONF
# pointing at it, so that "Slurm" is available in the run form. Without Slurm's binaries
# JupyterLab starts all the same, with no SLURM_CONF, and slurm.spec.ts skips saying why.
# SIGTERM (Playwright's gracefulShutdown) stops JupyterLab and the cluster.
# usage: start-lab-slurm.sh PORT [extra jupyter lab args...]
set -euo pipefail
port=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
python=${GPUDOJO_PYTHON:-$repo/.venv/bin/python}
work=$(mktemp -d "${TMPDIR:-/tmp}/gpudojo-ui-slurm-$port-XXXX")
serve_pid=
lab_pid=

stop() {
  trap - EXIT TERM INT
  [ -n "$lab_pid" ] && kill -TERM "$lab_pid" 2>/dev/null || true
  [ -n "$serve_pid" ] && kill -TERM "$serve_pid" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap stop EXIT
trap 'exit 143' TERM INT

missing=$("$python" "$repo/tests/python/slurm_cluster.py" missing)
if [ -z "$missing" ]; then
  "$python" "$repo/tests/python/slurm_cluster.py" serve "$work/slurm" >"$work/slurm-serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 600); do
    [ -f "$work/slurm/ready" ] && break
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -f "$work/slurm/ready" ]; then
    export SLURM_CONF="$work/slurm/slurm.conf"
  else
    echo "start-lab-slurm: the Slurm cluster did not start; see $work/slurm-serve.log" >&2
  fi
else
  echo "start-lab-slurm: Slurm is not installed ($(echo $missing)): no cluster" >&2
fi

bash "$here/start-lab.sh" "$port" "$@" &
lab_pid=$!
wait "$lab_pid"
