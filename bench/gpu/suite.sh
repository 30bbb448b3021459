#!/usr/bin/env bash
# The whole test suite on a GPU box, CUDA tests unskipped: parallel first (fast), then the
# failures again one at a time (timing-sensitive tests may fail only under -n).
#   bash bench/gpu/suite.sh          (after `source bench/gpu/setup.sh` has worked once)
cd "$(dirname "$0")/../.."
source bench/gpu/setup.sh || exit 1
timeout ${SUITE_TIMEOUT:-300} python3 -m pytest -q -n 8 -o cache_dir=/tmp/pc --timeout 240 -rfs 2>&1 | tee "$OUT/suite-parallel.log" | tail -40
timeout ${RERUN_TIMEOUT:-200} python3 -m pytest -q -o cache_dir=/tmp/pc --lf --timeout 120 -rfs 2>&1 | tee "$OUT/suite-rerun.log" | tail -60
