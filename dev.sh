#!/usr/bin/env bash
# One entry point for a fresh machine with Python 3.11:
#   bash dev.sh demo   set up .venv and run `trnprof demo`
#   bash dev.sh test   set up .venv with the test extras (and system packages) and run the suite
# Extra arguments after `test` go to pytest.
set -euo pipefail
cd "$(dirname "$0")"

python_bin() {
  for candidate in python3.11 python3 python; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
      echo "$candidate"; return
    fi
  done
  echo "dev.sh: Python >= 3.11 is required" >&2; exit 2
}

setup_venv() {  # $1: pip extras spec, e.g. "." or ".[test]"
  [ -x .venv/bin/python ] || "$(python_bin)" -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check -e "$1"
}

ensure_chromium() {  # the report's browser tests drive Debian's chromium, never a downloaded browser
  command -v chromium >/dev/null 2>&1 && return
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "dev.sh: install Debian's chromium (apt-get install chromium) for the browser tests" >&2
  fi
}

case "${1:-}" in
  demo)
    setup_venv "."
    exec .venv/bin/trnprof demo
    ;;
  test)
    shift
    ensure_chromium
    setup_venv ".[test]"
    exec .venv/bin/python -m pytest "$@"
    ;;
  *)
    echo "usage: bash dev.sh demo | bash dev.sh test [pytest args]" >&2; exit 2
    ;;
esac
