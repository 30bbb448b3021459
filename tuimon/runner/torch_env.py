"""What a runner hands torch from its environment, and what it tells of the torch it runs.

The supervisor names the run's Inductor cache (and Triton's, and --torch-trace's directory) in
the environment, relative to its own working directory when ``--out`` is relative. torch 2.9
runs its C++ compiler with the cache's path as it finds it, from another directory, and fails
(``cc1plus: fatal error: sess/.../main.cpp: No such file``); a script that changes directory
would lose them on any torch. The runner makes them absolute first thing, while it still runs
in the supervisor's directory and before torch reads them (a script run starts in its own
directory, control/files.py: the supervisor hands it absolute paths already).
"""

from __future__ import annotations

import os
import platform
import re
import sys

# The torch releases tuimon is tested with (make compat: docs/development.md, bench/RESULTS.md):
# older ones are refused in one line, newer ones run with a note.
OLDEST, NEWEST = (2, 4), (2, 14)


class TorchTooOld(Exception):
    """The run's interpreter has a torch older than ``OLDEST``: one line, no traceback."""


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


def _release(version: str) -> tuple[int, int]:
    major, minor = (re.findall(r"\d+", version) + ["0", "0"])[:2]
    return int(major), int(minor)


def check_version(torch) -> str | None:
    """Raise TorchTooOld below ``OLDEST``; past ``NEWEST``, the note to say (else None)."""
    found = _release(torch.__version__)
    if found < OLDEST:
        raise TorchTooOld(f"tuimon needs torch {OLDEST[0]}.{OLDEST[1]} or newer; {sys.executable} has "
                          f"torch {torch.__version__} (pip install -U torch, or run the script with "
                          "another Python)")
    if found > NEWEST:
        return (f"torch {torch.__version__} is newer than tuimon was tested with ({OLDEST[0]}.{OLDEST[1]} "
                f"to {NEWEST[0]}.{NEWEST[1]}): compile events torch renamed may be missing")
    return None
