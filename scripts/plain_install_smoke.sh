#!/usr/bin/env bash
# A plain install runs every command (issue 34): `pip install .` (no extras, not editable) into a
# fresh venv, then each command once on a simulated run and a shipped trace, from a folder outside
# the checkout, so only what the package declares and ships is there. Any non-zero exit fails.
#   bash scripts/plain_install_smoke.sh [PYTHON]     (PYTHON >= 3.11; `bash dev.sh smoke` picks it)
# pip's own cache is reused (the wheels of the dependencies); the venv is made anew each time.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${1:-python3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/trnprof-smoke.XXXXXX")"
trap 'rm -rf "$work"' EXIT
trace="$repo/tests/data/kineto/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"

# the files a fresh clone has (tracked, or new and not ignored): no build/ or egg-info left by an
# earlier build of the checkout can mask a file the package fails to ship
mkdir "$work/src"
if git -C "$repo" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$repo" && git ls-files -z --cached --others --exclude-standard |
                   tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$work/src"
else  # not a git checkout (an unpacked archive): all but the build outputs
  tar -C "$repo" --exclude=./.venv --exclude=./build --exclude='*.egg-info' -cf - . | tar -xf - -C "$work/src"
fi
echo "smoke: pip install . (a copy of $repo) into a fresh venv (no extras)"
"$python" -m venv "$work/venv"
if ! "$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$work/src" >"$work/pip.log" 2>&1; then
  echo "smoke: FAILED: pip install ."; tail -n 40 "$work/pip.log"; exit 1
fi
echo "smoke: installed in $SECONDS s"
export TRNPROF_CACHE_DIR="$work/cache" PATH="$work/venv/bin:$PATH"
cd "$work"

count=0
step() {  # run `trnprof ARGS`; on failure show its output and stop
  count=$((count + 1))
  local started=$SECONDS status=0
  trnprof "$@" >"$work/step.log" 2>&1 || status=$?
  if [ "$status" != 0 ]; then
    echo "smoke: FAILED (exit $status): trnprof $*"
    tail -n 40 "$work/step.log"
    exit 1
  fi
  echo "smoke: ok  $((SECONDS - started)) s  trnprof $*"
}

step --version
step simulate --preset tiny -o run
step ingest "$trace" -o ingested
step info run
step info ingested --format json
step query run "SELECT COUNT(*) AS n FROM events"
step check run
step analyze run
step analyze "$trace"
step report run -o run.html
step diff run run
step diff run run --fail-if "step_time>+5%" --format markdown -o diff.md
step whatif run --set tp=2
step whatif run --scale collective=0
step export run -o run.json.gz
step rules list
step rules show CU001
step rules docs -o rule-docs
step record -o recorded -- "$work/venv/bin/python" -c "import time; time.sleep(1.5)"
step demo -o demo
[ -s demo/report.html ] && [ -s demo/analyze.json ] || { echo "smoke: FAILED: demo wrote no report"; exit 1; }
echo "smoke: $count commands ran from a plain install"
