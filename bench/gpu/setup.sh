# Source this on a lent GPU box (the device tool) before any bench/gpu script:
#   source bench/gpu/setup.sh
# The box has python3 with torch, timm, psutil, nvidia-ml-py, pytest, but no textual: the wheels
# for those travel in .whl/ (made here with `pip download --python-version 3.12 ...`, see
# bench/gpu/README.md). tuimon itself is imported from the working tree (PYTHONPATH).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null || return 1
export PYTHONPATH=/tmp/site:$PWD
export PYTHONUNBUFFERED=1
export OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, torchvision, timm, textual, pynvml, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'torchvision', torchvision.__version__, 'timm', timm.__version__, 'textual', textual.__version__)" | tee -a "$OUT/gpu.txt"
