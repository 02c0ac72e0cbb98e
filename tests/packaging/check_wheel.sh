#!/usr/bin/env bash
# Builds the wheel as `pip install .` does on a clean clone (isolated build, so the
# jupyter-builder hook runs `jlpm build:prod`), installs it into a fresh venv whose PATH
# has no Node, and checks that JupyterLab and Jupyter Server both see gpudojo as OK.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A copy of the tracked and new files only: no node_modules, no prior build output.
mkdir -p "$work/src"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard \
  | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | xargs -0 cp --parents -t "$work/src")
test ! -e "$work/src/server/gpudojo/labextension"

echo "check_wheel: building the wheel (isolated, as pip install . does)"
python3 -m pip wheel -q --no-deps -w "$work/dist" "$work/src"
wheel=$(ls "$work"/dist/gpudojo-*.whl)
python3 - "$wheel" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
for want in ("share/jupyter/labextensions/gpudojo/static/style.js",
             "etc/jupyter/jupyter_server_config.d/gpudojo.json",
             "gpudojo/_packaged/content/README.md", "gpudojo/_packaged/labs/README.md"):
    if not any(n.endswith(want) for n in names):
        sys.exit(f"check_wheel: the wheel lacks {want}")
# Exercises ship their starters and hidden checks, never our solutions (hatch_build.py).
exercises = [n for n in names if "/_packaged/content/exercises/" in n]
for part in ("/starters/", "/checks/", "/exercise.toml"):
    if not any(part in n for n in exercises):
        sys.exit(f"check_wheel: the wheel's exercises lack {part}")
if any("/solution/" in n for n in exercises):
    sys.exit("check_wheel: the wheel ships an exercise solution")
PY

echo "check_wheel: installing it in a fresh venv without Node"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$wheel"
# No Node: a `node` and `npm` that fail stand first on PATH, as on a machine without them.
mkdir -p "$work/nonode"
for tool in node npm npx; do printf '#!/bin/sh\necho "%s: not installed" >&2\nexit 127\n' "$tool" > "$work/nonode/$tool"; chmod +x "$work/nonode/$tool"; done
export PATH="$work/nonode:$work/venv/bin:/usr/bin:/bin"
if node --version >/dev/null 2>&1; then echo "check_wheel: node is still reachable"; exit 1; fi
plain() { sed 's/\x1b\[[0-9;]*m//g'; }

labext=$(jupyter labextension list 2>&1 | plain)
echo "$labext" | grep -E "gpudojo v[0-9.]+ enabled .*OK" >/dev/null || { echo "$labext"; exit 1; }
serverext=$(jupyter server extension list 2>&1 | plain)
echo "$serverext" | grep -E "gpudojo enabled" >/dev/null || { echo "$serverext"; exit 1; }
echo "$serverext" | grep -E "gpudojo .*OK" >/dev/null || { echo "$serverext"; exit 1; }
content=$(gpudojo paths | sed -n 's/^content: //p')
test -f "$content/README.md"
case "$content" in *site-packages/gpudojo/_packaged/content) ;; *) echo "content read from $content"; exit 1;; esac
# The installed server answers the API (and serves the prebuilt extension's assets).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
jupyter server --no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port="$port" --IdentityProvider.token=wheel \
  --ServerApp.root_dir="$work" --allow-root >"$work/server.log" 2>&1 &
server=$!
python3 - "$port" <<'PY' || { kill "$server"; cat "$work/server.log"; exit 1; }
import json, sys, time, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
for _ in range(300):
    try:
        with urllib.request.urlopen(f"{base}/gpudojo/api/gpu/devices?token=wheel", timeout=2) as r:
            doc = json.load(r)
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("check_wheel: the server never answered")
assert doc["mode"] in ("gpu", "cpu", "replay") and doc["host"]["cores_logical"] >= 1, doc
with urllib.request.urlopen(f"{base}/lab/extensions/gpudojo/static/style.js?token=wheel", timeout=5) as r:
    assert r.status == 200
PY
kill "$server"; wait "$server" 2>/dev/null || true
echo "check_wheel: the wheel carries the labextension; gpudojo is enabled and OK without Node"
echo "check_wheel: 1 passed, 0 failed"
