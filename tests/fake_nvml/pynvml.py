"""``import pynvml`` for subprocesses, answered by tests/fake_pynvml.py: one fake H100.

The GPU programme's dry run (bench/gpu/programme.py --dry-run) puts this folder first on
PYTHONPATH, so tuimon's probes (in the supervisor), ``tuimon doctor`` and bench/gpu/nvml_check.py
read a GPU's values on a machine without one, through the same code as on a real GPU.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests import fake_pynvml as _fake  # noqa: E402

_module = _fake.make([_fake.FakeDevice()])
# the shapes a real H100 answered with (nvidia-ml-py 13.610, driver 580.159.04)
_module.nvmlSystemGetDriverVersion = lambda: "580.159.04"
_module.nvmlSystemGetCudaDriverVersion = lambda: 13000
globals().update({k: v for k, v in vars(_module).items() if not k.startswith("__")})
