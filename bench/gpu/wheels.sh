#!/usr/bin/env bash
# Here (with internet), once: the wheels a lent GPU box lacks, for its Python, into .whl/ (kept
# out of git by .gitignore; the device tool's `carry: [".whl"]` takes it along).
#   bash bench/gpu/wheels.sh [PYTHON_VERSION]     (default 3.12: the boxes seen so far)
# The box has torch, torchvision, triton and friends; tuimon's other needs are pinned here at the
# versions this project's CI runs, pure Python except psutil (abi3: any CPython 3.6+), so the set
# does not depend on the box's exact Python. Each wheel comes alone (--no-deps): the list is the
# whole closure, checked below against each wheel's own Requires-Dist.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYV=${1:-3.12}
DEST=.whl
PINS=(
  # the TUI and its Markdown stack
  textual==8.2.8 rich==15.0.0 markdown-it-py==4.3.0 mdurl==0.1.2 mdit-py-plugins==0.7.0
  linkify-it-py==2.2.0 uc-micro-py==1.0.3 platformdirs==4.14.7 pygments==2.21.0
  typing_extensions==4.16.0
  # tuimon serve (aiohttp and jinja2 are on the box)
  textual-serve==1.1.3 aiohttp-jinja2==1.6
  # probes, recipes
  psutil==7.2.2 nvidia-ml-py==13.615.71 timm==1.0.31
  # the tests: pytest and the plugins the suite uses
  pytest==8.4.2 pluggy==1.7.0 iniconfig==2.3.1 packaging==26.3 pytest-asyncio==1.5.0
  pytest-timeout==2.4.0 pytest-xdist==3.8.0 execnet==2.1.2 syrupy==4.8.0
  pytest-textual-snapshot==1.1.0
)
rm -rf "$DEST" && mkdir -p "$DEST"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYV" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux1_x86_64 --platform any -d "$DEST" "${PINS[@]}" 2>&1 \
  | { grep -v "is ignored: it is neither" || true; }
python3 - "$DEST" <<'EOF'
# Every wheel's needs are in .whl or on the box (its image's package list: KINDS.md).
import re, sys, zipfile
from pathlib import Path
ON_BOX = {"torch", "torchvision", "aiohttp", "jinja2", "markupsafe", "pyyaml", "huggingface-hub",
          "safetensors", "numpy", "pillow", "filelock", "fsspec", "exceptiongroup", "tomli",
          "colorama", "backports-asyncio-runner"}
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
wheels = sorted(Path(sys.argv[1]).glob("*.whl"))
have = {norm(w.name.split("-")[0]) for w in wheels}
missing = set()
for w in wheels:
    with zipfile.ZipFile(w) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        for line in z.read(meta).decode().splitlines():
            if line.startswith("Requires-Dist:") and "extra ==" not in line:
                req = norm(re.split(r"[ ;<>=!~\[(]", line.split(":", 1)[1].strip())[0])
                if "python_version" in line and ('< "3.1' in line or "< '3.1" in line):
                    continue  # a backport for an older Python than the box's
                if req not in have and req not in ON_BOX:
                    missing.add(f"{req} (needed by {w.name})")
total = sum(w.stat().st_size for w in wheels)
print(f"{len(wheels)} wheels, {total / 2**20:.1f} MiB in {sys.argv[1]}")
if missing:
    sys.exit("missing from the pins and the box: " + ", ".join(sorted(missing)))
if total > 40 * 2**20:
    sys.exit("over 40 MiB: the device tool carries 64 MiB with the working tree")
EOF
