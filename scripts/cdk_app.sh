#!/bin/sh
# cdk.json's "app": runs app.py with the project's own Python, so `node_modules/.bin/cdk synth|diff|deploy|
# bootstrap` works from a fresh shell without activating the venv.
#
# Order: $AGENTKIT_PYTHON (explicit) > ./.venv/bin/python (what `make setup` creates) > python3 on PATH, if it
# can import aws_cdk (e.g. an activated venv or a CI image). Otherwise it stops with the fix, not a traceback.
set -eu
root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
if [ -n "${AGENTKIT_PYTHON:-}" ]; then
  py=$AGENTKIT_PYTHON
elif [ -x "$root/.venv/bin/python" ]; then
  py=$root/.venv/bin/python
else
  py=python3
fi
if ! "$py" -c "import aws_cdk" >/dev/null 2>&1; then
  echo "cdk app: $py cannot import aws_cdk. Run 'make setup' in $root (creates .venv with the pinned" >&2
  echo "dependencies), or point AGENTKIT_PYTHON at a Python that has them." >&2
  exit 1
fi
exec "$py" "$root/app.py" "$@"
