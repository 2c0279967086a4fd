#!/bin/bash
# CPU per section, ours against the peers, in one run: the shapes 1×1, 1×8, 1×32 and 4×8 (processes ×
# instances each) on Redis, Redis semaphores, and Redlock over five servers. Needs the test servers up
# (`npm run services -- up`) and their LOCK_TEST_* variables; prints one line per subject and shape.
# Usage: bash bench/probes/cpu-matrix.sh [window ms, default 3000]
set -uo pipefail
cd "$(dirname "$0")/../.."
WINDOW=${1:-3000}
single=$(echo "${LOCK_TEST_REDIS_URL:?start the test servers first}" | sed -E 's#.*:([0-9]+)/?$#\1#')
five=$(echo "${LOCK_TEST_REDIS_URLS:?}" | tr ',' '\n' | sed -E 's#.*:([0-9]+)/?$#\1#' | paste -sd,)
run() { # ports subject processes instances
  PROBE_REDIS_PORTS=$1 timeout 120 node -r @swc-node/register bench/probes/cpu-per-section.ts "$2" "$3" "$4" "$WINDOW" 2>&1 | grep "sections/s" || echo "$2 $3 processes × $4 instances: no result (the probe failed)"
}
for shape in "1 1" "1 8" "1 32" "4 8"; do
  set -- $shape
  run "$single" redis "$1" "$2"
  run "$single" peer:redis-semaphore@redis "$1" "$2"
  run "$single" peer:redlock@redis "$1" "$2"
  if [ "$1 $2" = "1 1" ]; then run "$single" "floor:redis SET NX PX + EVAL" 1 1; fi
  run "$single" semaphore:redis "$1" "$2"
  run "$single" peer:redis-semaphore-semaphore@redis "$1" "$2"
  run "$five" redlock "$1" "$2"
  run "$five" peer:redlock@redis5 "$1" "$2"
done
