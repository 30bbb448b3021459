"""Warm start, child side: torch's mega-cache bundle (``torch.compiler.save_cache_artifacts`` /
``load_cache_artifacts``) loaded before the run's first compile and saved after its compiles.

The supervisor says what to do in TUIMON_ARTIFACTS (envvars.ARTIFACTS, control/warm.py): this
run's artifacts directory in the session, whether to save a bundle there, a bundle to load. The
Inductor cache directory itself (FX graphs, AOTAutograd entries and the compiled C++ / Triton
kernels) is seeded and kept by the supervisor, not here. A bundle that is missing, unreadable
or from another torch is one ``artifacts`` event with ``action: unusable`` and a cold compile,
never a failed run.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from tuimon import events
from tuimon.envvars import ARTIFACTS

BUNDLE = "mega-cache.bin"  # the bundle's file name in a run's artifacts directory


def settings() -> dict:
    """This run's artifact settings ({} when the supervisor gave none, or unreadable ones)."""
    try:
        found = json.loads(os.environ.get(ARTIFACTS) or "{}")
    except ValueError:
        return {}
    if not isinstance(found, dict):
        return {}
    rank = os.environ.get("RANK")
    if rank not in (None, "", "0"):  # a job's ranks compile the same graphs: rank 0 saves them
        found["save"] = False
    return found


def entries(info) -> dict[str, int]:
    """A CacheInfo's artifacts by kind: {"inductor": 2, "aot_autograd": 1, ...}."""
    found = getattr(info, "artifacts", None) or {}
    return {str(kind): len(keys) for kind, keys in found.items() if keys}


class WarmStart:
    def __init__(self, emitter, config: dict | None = None) -> None:
        self.emitter = emitter
        self.config = settings() if config is None else config

    def load(self, torch) -> None:
        """Before the first compile: the bundle to start from, if any (the cache directory was
        seeded by the supervisor already when the start is from a directory)."""
        path = self.config.get("load")
        if not path:
            return
        api = getattr(getattr(torch, "compiler", None), "load_cache_artifacts", None)
        if api is None:
            self._unusable(f"torch {torch.__version__} has no torch.compiler.load_cache_artifacts: "
                           "the bundle cannot be loaded, this run compiles cold")
            return
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            self._unusable(f"compile artifacts {path}: {exc.strerror or exc}: this run compiles cold")
            return
        t0 = time.perf_counter()
        try:
            info = api(data)
        except Exception as exc:  # noqa: BLE001 - a bad bundle is a cold compile, not a failure
            self._unusable(f"torch could not load {path} ({type(exc).__name__}: "
                           f"{str(exc).strip()[:120]}): this run compiles cold")
            return
        if info is None:  # torch says the bytes are no bundle it can read
            self._unusable(f"torch could not read {path} (corrupt, or written by another torch "
                           "version): this run compiles cold")
            return
        self.emitter.emit_now(events.ARTIFACTS, action="loaded", kind="bundle", path=str(path),
                              bytes=len(data), entries=entries(info),
                              seconds=round(time.perf_counter() - t0, 3))

    def save(self, torch) -> None:
        """After the run's compiles: the bundle of everything it compiled (or found in its
        cache), written whole or not at all."""
        if not self.config.get("save") or not self.config.get("dir"):
            return
        api = getattr(getattr(torch, "compiler", None), "save_cache_artifacts", None)
        if api is None:
            self.emitter.emit_now(events.ARTIFACTS, action="saved", bytes=None, text=(
                f"torch {torch.__version__} has no torch.compiler.save_cache_artifacts: the "
                "cache directory alone is kept"))
            return
        try:
            result = api()
        except Exception as exc:  # noqa: BLE001 - what was measured stands without it
            self.emitter.emit_now(events.ARTIFACTS, action="saved", bytes=None, text=(
                f"torch could not save its compile artifacts ({type(exc).__name__}: "
                f"{str(exc).strip()[:120]})"))
            return
        if result is None:  # nothing compiled (a compile that failed, or a frame skipped)
            self.emitter.emit_now(events.ARTIFACTS, action="saved", bytes=0, entries={})
            return
        data, info = result
        path = Path(self.config["dir"]) / BUNDLE
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            self.emitter.emit_now(events.ARTIFACTS, action="saved", bytes=None,
                                  text=f"cannot write {path}: {exc.strerror or exc}")
            return
        self.emitter.emit_now(events.ARTIFACTS, action="saved", kind="bundle", bytes=len(data),
                              entries=entries(info))

    def _unusable(self, text: str) -> None:
        self.emitter.emit_now(events.ARTIFACTS, action="unusable", text=text)
