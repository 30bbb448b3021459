"""What a runner hands torch from its environment, and what it tells of the torch it runs.

The supervisor names the run's Inductor cache (and Triton's, and --torch-trace's directory) in
the environment, relative to its own working directory when ``--out`` is relative. torch 2.9
runs its C++ compiler with the cache's path as it finds it, from another directory, and fails
(``cc1plus: fatal error: sess/.../main.cpp: No such file``); a script that changes directory
would lose them on any torch. The runner makes them absolute first thing, while it still runs
in the supervisor's directory and before torch reads them.
"""

from __future__ import annotations

import os
import platform

# Paths torch (or Triton) reads from the environment, which the supervisor sets on each run.
PATH_VARS = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TORCH_TRACE")


def absolute_paths(environ=os.environ) -> None:
    for name in PATH_VARS:
        value = environ.get(name)
        if value and not os.path.isabs(value):
            environ[name] = os.path.abspath(value)


def absolute(path: str | None) -> str | None:
    return os.path.abspath(path) if path else path


def versions(torch) -> dict:
    """The run's own torch, Python and CUDA (torch's build; None for a CPU-only build): what
    ``run_started`` records, since the supervisor's environment may hold another torch."""
    return {"torch": torch.__version__, "python": platform.python_version(),
            "cuda": torch.version.cuda}
