#!/usr/bin/env bash
# The property test's abort and close sequences, long, outside `npm test` (issue 41): for each database
# backend that waits inside its server, PROPERTY_RUNS runs (2,000 by default) of acquisitions, waits aborted
# or timed out behind them, releases and closes (PROPERTY_COMMANDS=abort-close: the model and every check of
# test/contract/property.spec.ts are the same), with one busy CPU beside them, as a CI machine has.
#
#   scripts/property-long-run.sh [results.md]
#
# Servers: the shared ones when LOCK_TEST_* are set, else the test setup starts its own. Appends one line per
# backend (runs, minutes, result, load average) to the results file (default bench/results/property-long-run.md).
set -uo pipefail

RUNS="${PROPERTY_RUNS:-2000}"
OUT="${1:-bench/results/property-long-run.md}"
SUBJECTS=('pessimistic (MariaDB)' 'pessimistic (PostgreSQL)' 'advisory GET_LOCK (MariaDB)' 'advisory (PostgreSQL)')

# One busy CPU beside the tests, stopped on the way out (by its own pid).
node -e 'for (;;) {}' &
BUSY=$!
trap 'kill "$BUSY" 2>/dev/null' EXIT

if [ ! -f "$OUT" ]; then
  {
    echo '# Property test, long run (abort and close sequences)'
    echo
    echo 'Written by `scripts/property-long-run.sh` (one busy CPU beside the tests; the load average is the'
    echo "machine's at the end of each backend's run, from /proc/loadavg). Each line: one backend, \`PROPERTY_RUNS\`"
    echo 'runs of up to 12 commands, `PROPERTY_COMMANDS=abort-close`.'
    echo
    echo '| date (UTC) | commit | backend | runs | minutes | result | load average (1, 5, 15 min) | cores |'
    echo '|---|---|---|---|---|---|---|---|'
  } > "$OUT"
fi

status=0
for subject in "${SUBJECTS[@]}"; do
  # vitest's -t is a regular expression: the parentheses of the titles escaped.
  pattern="against a model \\(fast-check\\): $(printf '%s' "$subject" | sed 's/[()]/\\&/g')"
  started=$(date +%s)
  log="$(mktemp)"
  PROPERTY_RUNS="$RUNS" PROPERTY_COMMANDS=abort-close npx vitest run test/contract/property.spec.ts -t "$pattern" >"$log" 2>&1
  code=$?
  minutes=$(awk -v s="$started" -v e="$(date +%s)" 'BEGIN { printf "%.1f", (e - s) / 60 }')
  # The summary line without vitest's colours: the one test of the backend passed.
  if [ "$code" -eq 0 ] && sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -Eq 'Tests +1 passed'; then
    result='passed'
  else
    result="FAILED (see $log)"
    status=1
    grep -E 'seed|Counterexample|AssertionError' "$log" | head -5
  fi
  echo "| $(date -u +%Y-%m-%dT%H:%MZ) | $(git rev-parse --short HEAD)+wip | $subject | $RUNS | $minutes | $result | $(cut -d' ' -f1-3 /proc/loadavg) | $(nproc) |" | tee -a "$OUT"
  [ "$result" = 'passed' ] && rm -f "$log"
done
exit "$status"
