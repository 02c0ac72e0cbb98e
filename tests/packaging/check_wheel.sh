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
PY

echo "check_wheel: installing it in a fresh venv without Node"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$wheel"
export PATH="$work/venv/bin"   # no node, no npm, no jlpm
! command -v node >/dev/null

labext=$(jupyter labextension list 2>&1)
echo "$labext" | grep -E "gpudojo v[0-9.]+ enabled .*OK" >/dev/null || { echo "$labext"; exit 1; }
serverext=$(jupyter server extension list 2>&1)
echo "$serverext" | grep -E "gpudojo enabled" >/dev/null || { echo "$serverext"; exit 1; }
echo "$serverext" | grep -E "gpudojo .*OK" >/dev/null || { echo "$serverext"; exit 1; }
content=$(gpudojo paths | sed -n 's/^content: //p')
test -f "$content/README.md"
case "$content" in *site-packages/gpudojo/_packaged/content) ;; *) echo "content read from $content"; exit 1;; esac
echo "check_wheel: the wheel carries the labextension; gpudojo is enabled and OK without Node"
echo "check_wheel: 1 passed, 0 failed"
