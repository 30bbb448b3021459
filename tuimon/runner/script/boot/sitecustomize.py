"""tuimon's hooks in a script run. The supervisor puts this directory first on PYTHONPATH and
the run's settings in TUIMON_SETTINGS; Python imports this module at start-up, before the user's
script, whatever started it (``python train.py``, ``python -m pkg``, a shebang). It removes
TUIMON_SETTINGS from the environment (the script's own child processes, DataLoader workers
included, stay unhooked) and then hands over to the next sitecustomize on the path, if any. In
torchrun's own process it puts the settings back for torchrun's workers, marked as ranks: each of
them is hooked as a rank of the job (runner/script/hooks.py)."""

import os
import sys


def _chain() -> None:
    """Import the sitecustomize this one hides (a distribution's or a virtualenv's)."""
    here = os.path.dirname(os.path.abspath(__file__))
    ours = sys.modules.pop("sitecustomize", None)
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    try:
        import sitecustomize  # noqa: F401 - the next one runs its own code on import
    except ImportError as exc:
        if exc.name != "sitecustomize":
            raise
        if ours is not None:
            sys.modules["sitecustomize"] = ours
    finally:
        sys.path[:] = saved


def _start() -> None:
    config = os.environ.pop("TUIMON_SETTINGS", None)  # tuimon.envvars.SETTINGS
    if config is None:
        return
    from tuimon.runner.script import hooks

    hooks.start(config)


_chain()
_start()
