#!/usr/bin/env bash
# The sessions recorded in bench/RESULTS.md, run by hand (minutes; not part of the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/sessions}
tuimon=.venv/bin/tuimon
$tuimon recipes/tiny_mlp.py --headless --steps 300 --out "$out"
$tuimon recipes/convnext_l.py --headless --modes eager,default --precision fp32 --steps 30 --out "$out"
$tuimon recipes/convnext_l.py --headless --modes eager,default --precision amp --steps 30 --out "$out"
