#!/usr/bin/env bash
# Run the sandbox attack suites as an unprivileged user (the image runs as uid 10001), from a root shell.
#
#   scripts/attacks_as_uid.sh [UID] [PYTHON] [PYTEST ARGS...]
#
# Default: tests/e2e/test_sandbox_attacks.py and tests/e2e/test_sandbox_escapes.py.
#
# The project venv's interpreter may live where that user cannot read it (e.g. pyenv under /root), so a tiny venv
# is built from PYTHON (a system python3 of the same minor version, default /usr/bin/python3) with a .pth file
# pointing at the project venv's site-packages. Needs root (setpriv), bubblewrap and socat.
set -euo pipefail
cd "$(dirname "$0")/.."
uid="${1:-10001}"
python="${2:-/usr/bin/python3}"
shift $(( $# < 2 ? $# : 2 ))
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(tests/e2e/test_sandbox_attacks.py tests/e2e/test_sandbox_escapes.py)
site="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
site="$(realpath "$site")"
work="$(mktemp -d /tmp/agentkit-uid-XXXXXX)"
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/venv"
echo "$site" > "$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/project.pth"
mkdir -p "$work/home"
chmod -R a+rX "$work"
chown -R "$uid:$uid" "$work/home"
setpriv --reuid "$uid" --regid "$uid" --clear-groups env -i \
  PATH="$work/venv/bin:/usr/local/bin:/usr/bin:/bin" HOME="$work/home" PYTHONPATH="$PWD" LANG=C.UTF-8 \
  "$work/venv/bin/python" -m pytest "${tests[@]}" -q -s -p no:cacheprovider \
  --basetemp="$work/home/pytest"
