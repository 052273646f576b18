#!/usr/bin/env bash
# The three suites of `make test` in two lanes, so a 2-core machine keeps both cores busy (the suites alone
# use about one: docs/benchmarks.md, "make test on a fresh machine"):
#   lane 1: the main suite in .venv, printed as it runs;
#   lane 2: the conformance suite in .venv-vllm, then the live suite in .venv-vllm-live, then the main suite's
#           files in MAIN_IN_LANE2 (in .venv), each into a log under build/test-logs/ printed when the lane ends.
# MAIN_IN_LANE2 evens the lanes: the main suite ran 20.5 min beside conformance-then-live's 14 (CI, 2026-12-07);
# with the notebooks and the Ray sweep moved, 20.2 min beside 17.4; the room tests (about 1.5 min) follow them.
# Exits non-zero if any suite failed, naming it. LAB_TEST_LANES=1 runs the three one after the other.
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS=build/test-logs
mkdir -p "$LOGS"

conformance() { LAB_REQUIRE_VLLM=1 .venv-vllm/bin/python -m pytest -q -p no:cacheprovider tests/conformance; }
live() { LAB_REQUIRE_LIVE=1 .venv-vllm-live/bin/python -m pytest -q -p no:cacheprovider tests/live; }
MAIN_IN_LANE2=(tests/test_notebooks.py tests/test_sweep.py tests/test_app_concurrency.py)
main_rest() { .venv/bin/python -m pytest -q -p no:cacheprovider --durations=10 "${MAIN_IN_LANE2[@]}"; }
MAIN_IGNORES=()
for f in "${MAIN_IN_LANE2[@]}"; do MAIN_IGNORES+=("--ignore=$f"); done

summary() {  # what pytest said at the end of a lane-2 suite: skips with their reasons, failures, the count
  grep -E '^(SKIPPED|FAILED|ERROR) ' "$LOGS/$1.log"
  echo "$1: $(tail -n 1 "$LOGS/$1.log")"
}

lane2() {
  local rc=0
  echo "== lane 2: conformance (.venv-vllm), then live (.venv-vllm-live), then ${MAIN_IN_LANE2[*]} (.venv); logs in $LOGS/"
  conformance >"$LOGS/conformance.log" 2>&1 || rc=1
  summary conformance
  live >"$LOGS/live.log" 2>&1 || rc=$((rc | 2))
  summary live
  main_rest >"$LOGS/main-lane2.log" 2>&1 || rc=$((rc | 4))
  summary main-lane2
  return $rc
}

if [ "${LAB_TEST_LANES:-2}" = "1" ]; then
  .venv/bin/python -m pytest -q && conformance && live
  exit $?
fi

lane2 >"$LOGS/lane2.log" 2>&1 &
lane2_pid=$!
# Stopped (Ctrl-C, a CI timeout): lane 2's suite goes with it.
trap 'pkill -P "$lane2_pid" 2>/dev/null; kill "$lane2_pid" 2>/dev/null; exit 130' INT TERM
.venv/bin/python -m pytest -q --durations=15 "${MAIN_IGNORES[@]}"
main_rc=$?
wait "$lane2_pid"
lane2_rc=$?
cat "$LOGS/lane2.log"
failed=()
[ "$main_rc" -ne 0 ] && failed+=("main (.venv)")
if [ $((lane2_rc & 1)) -ne 0 ]; then failed+=("conformance"); echo "== $LOGS/conformance.log"; cat "$LOGS/conformance.log"; fi
if [ $((lane2_rc & 2)) -ne 0 ]; then failed+=("live"); echo "== $LOGS/live.log"; cat "$LOGS/live.log"; fi
if [ $((lane2_rc & 4)) -ne 0 ]; then
  failed+=("main, lane 2 (.venv)"); echo "== $LOGS/main-lane2.log"; cat "$LOGS/main-lane2.log"
fi
if [ "${#failed[@]}" -ne 0 ]; then
  echo "make test: failed: ${failed[*]}" >&2
  exit 1
fi
echo "make test: the main, conformance and live suites passed"
