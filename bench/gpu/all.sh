#!/usr/bin/env bash
# The GPU programme (issue 27), one stage a call of the device tool:
#   bash bench/gpu/all.sh STAGE [--dry-run]        STAGE: essential (the first call a lent device
#                                                  gets, ≤ 9 min with set-up) check amp fp32 modes
#                                                  modes-fp32 extras try phases warm suite, or all
#                                                  (every one, in order)
# Set-up from the carried wheels (bench/gpu/setup.sh), then bench/gpu/programme.py STAGE within
# what is left of the call's 600 s (BUDGET_S, default 570, less the set-up). Everything the
# stage measured goes to $OUT (STAGE.json, STAGE.log, STAGE.tar.gz, screenshots); turn fetched
# folders into the RESULTS.md section with `python bench/gpu/report.py DIR...`.
# The order, the carry list and each stage's duration: bench/gpu/README.md.
set -u
cd "$(dirname "$0")/../.."
start=$SECONDS
stage=${1:?usage: bash bench/gpu/all.sh STAGE [--dry-run]}
shift
if [ "${1:-}" = "--dry-run" ]; then
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}  # here, with this project's own venv
  PY=${PY:-python3}
else
  source bench/gpu/setup.sh || exit 1
  PY=python3
fi
export OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
spent=$(( SECONDS - start ))  # the programme caps a stage at its call's seconds (essential: 540) less this
budget=$(( ${BUDGET_S:-570} - spent ))
exec "$PY" bench/gpu/programme.py "$stage" --budget "$budget" --spent "$spent" "$@"
