#!/usr/bin/env bash
# One entry point for a fresh machine with Python 3.11:
#   bash dev.sh demo   set up .venv and run `trnprof demo`
#   bash dev.sh test   set up .venv with the test extras (and system packages) and run the suite
#                      in TRNPROF_TEST_WORKERS processes (default 2; pytest-xdist, a test file
#                      each, so a module's fixtures are made once; `-n 0` after it: one process)
#   bash dev.sh fast   the inner loop: the suite less its marked tests (slow, spark, browser, torch,
#                      root; pyproject.toml lists them, tests/conftest.py's MARKS and tests/slow.txt say which)
#   bash dev.sh smoke  install the package alone (no extras) into a fresh venv and run every command
#   bash dev.sh lint   ruff: lint and format check (pyproject.toml's [tool.ruff]; CI runs it)
#   bash dev.sh docs   regenerate every generated doc (scripts/gen_docs.py; tests fail on drift)
# Extra arguments after `test` or `fast` go to pytest (`bash dev.sh test -m spark`: one marker's tests).
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

test_workers() {  # the suite's processes: two keep both cores of the CI machine busy
  echo "${TRNPROF_TEST_WORKERS:-2}"
}

ensure_chromium() {  # the report's browser tests drive Debian's chromium, never a downloaded browser
  command -v chromium >/dev/null 2>&1 && return
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "dev.sh: install Debian's chromium (apt-get install chromium) for the browser tests" >&2
  fi
}

ensure_java() {  # the Spark engine's tests run Spark in local mode on Debian's Java 17, as Chromium above
  java -version 2>&1 | grep -Eq 'version "(1[7-9]|2[0-9])' && return
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  else
    echo "dev.sh: install Java 17 (apt-get install openjdk-17-jre-headless) for the Spark engine's tests" >&2
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
    ensure_java
    setup_venv ".[test]"
    exec .venv/bin/python -m pytest -n "$(test_workers)" --dist loadfile "$@"
    ;;
  fast)
    shift
    setup_venv ".[test]"
    exec .venv/bin/python -m pytest -n "$(test_workers)" --dist loadfile -m "not (slow or spark or browser or torch or root)" "$@"
    ;;
  smoke)
    exec bash scripts/plain_install_smoke.sh "$(python_bin)"
    ;;
  lint)
    setup_venv ".[test]"
    .venv/bin/ruff check .
    exec .venv/bin/ruff format --check .
    ;;
  docs)
    setup_venv ".[test]"
    exec .venv/bin/python scripts/gen_docs.py
    ;;
  *)
    echo "usage: bash dev.sh demo | bash dev.sh test [pytest args] | bash dev.sh fast [pytest args] | bash dev.sh smoke | bash dev.sh lint | bash dev.sh docs" >&2; exit 2
    ;;
esac
