#!/bin/bash
# Repeat a two-node torchrun job on loopback under two tuimon sessions (one per node), as
# tests/e2e/test_ranks.py does, N times (run by hand: bash bench/two_nodes.sh [N] [OUT]). A pair
# still running after 90 s is called hung: its ranks and launchers get SIGABRT, so Python's
# faulthandler (PYTHONFAULTHANDLER=1) writes where each one waits into the session's log.
# Prints one line a pair; OUT/N keeps each pair's sessions and output.
set -u
N=${1:-30}
OUT=${2:-/tmp/tuimon-two-nodes}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=$ROOT/.venv/bin/python
export PYTHONFAULTHANDLER=1
for i in $(seq 1 "$N"); do
  D=$OUT/$i; rm -rf "$D"; mkdir -p "$D"; cd "$D" || exit 1
  PORT=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  for n in 0 1; do
    "$PY" -m tuimon run --headless --modes eager --steps 20 --repeats 1 --out "$D/node$n" -- \
      "$PY" -m torch.distributed.run --nnodes 2 --node-rank $n --nproc-per-node 1 \
      --master-addr 127.0.0.1 --master-port "$PORT" "$ROOT/tests/scripts/ddp_train.py" \
      --slow-rank 1 --slow-ms 0.6 > "out$n.txt" 2> "err$n.txt" &
  done
  end=$((SECONDS + 90)); hung=0
  while [ -n "$(jobs -r)" ]; do
    if [ $SECONDS -gt $end ]; then hung=1; break; fi
    sleep 1
  done
  if [ $hung = 1 ]; then
    echo "pair $i: HUNG (stacks in $D/node*/*/logs)"
    pkill -ABRT -f "$ROOT/tests/scripts/ddp_train.py"; sleep 3
    pkill -ABRT -f "torch.distributed.run --nnodes 2"; sleep 3
    pkill -9 -f "tuimon run --headless --modes eager --steps 20 --repeats 1 --out $D"; wait
  else
    wait
    aborted=$(grep -l "SIGABRT\|Fatal Python error: Aborted" "$D"/node*/*/logs/*.log 2>/dev/null | wc -l)
    echo "pair $i: ended; logs with an abort: $aborted"
  fi
done
