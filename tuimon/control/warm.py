"""Warm start, parent side: what each compiled run's compile starts from, its fresh Inductor
cache seeded from compile artifacts, and a cold run's cache kept in the session as artifacts.
No torch here: the bundle is the runner's to load and save (runner/warm_start.py).

In the session directory (docs/sessions.md)::

    artifacts/<run>/cache/          a cold run's Inductor cache directory as it left it: FX graphs,
                                    AOTAutograd entries, compiled C++ / Triton kernels, autotuning
    artifacts/<run>/mega-cache.bin  torch's bundle of its compiles (save_cache_artifacts)

A compiled run starts
- ``cold``: a fresh, empty cache (the first round's processes, a restart, an added run);
- ``warm``: a fresh cache seeded *only* from artifacts — its variant's cold run in this session
  (rounds 2..K, ``--warm``'s extra process) or ``--cache-from``'s session — so the figure is the
  artifacts', not a leftover's. ``dir`` seeds a copy of the kept cache directory, ``bundle``
  leaves the directory empty and has the runner load the bundle;
- ``persistent``: the user's own cache (``--cache-dir`` / ``--warm-cache``), cold or warm as
  torch says; nothing is seeded or kept then (a bundle still is).
Artifacts that are missing or unreadable make a cold start, said in one ``artifacts`` event.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from tuimon import events
from tuimon.envvars import ARTIFACTS as ARTIFACTS_ENV
from tuimon.variants import Variant

ARTIFACTS = "artifacts"  # the session's subdirectory
CACHE = "cache"  # a run's kept Inductor cache directory, under artifacts/<run>/
BUNDLE = "mega-cache.bin"  # runner/warm_start.py writes it
FRESH = "inductor-cache"  # the session's per-run fresh caches, deleted when a run ends
COLD, WARM, PERSISTENT = "cold", "warm", "persistent"
KINDS = ("dir", "bundle")
IGNORE = shutil.ignore_patterns("locks", "*.lock", "*.tmp")


@dataclass
class Source:
    """--cache-from: another session's artifacts, per variant (variant_key -> its run's
    artifacts directory)."""

    path: Path
    name: str
    runs: dict[tuple, str] = field(default_factory=dict)  # variant key -> the source's run id
    auto: bool = False  # chosen by default (the last session alike), not named by --cache-from


def variant_key(mode: str, precision: str, axes) -> tuple:
    return (mode, precision, tuple(sorted(dict(axes).items())))


def size_of(path: Path) -> tuple[int, int]:
    """(bytes, files) under ``path`` (0, 0 when absent)."""
    total = files = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
                files += 1
            except OSError:
                continue
    return total, files


class WarmStarts:
    """The supervisor's warm-start bookkeeping: a start per run, its cache, what is kept."""

    def __init__(self, session: Path, policy: str = "rounds", warm_from: str = "dir",
                 persistent: Path | None = None, source: Source | None = None) -> None:
        self.session = Path(session).resolve()  # a runner's cwd may be elsewhere: absolute paths
        self.policy = policy  # rounds: rounds 2..K start warm; cold: every process cold
        self.warm_from = warm_from
        self.persistent = Path(persistent).resolve() if persistent else None
        self.source = source
        self.starts: dict[str, tuple[str, str | None]] = {}  # run -> (start, seed run or session)
        # variant key -> the run whose cache is kept as the variant's artifacts (its first), and
        # that later rounds start from (without --cache-from)
        self.keeper: dict[tuple, str] = {}

    def fresh(self, run: str) -> Path:
        return self.session / FRESH / run

    def artifacts(self, run: str) -> Path:
        return self.session / ARTIFACTS / run

    # ---- at enqueue --------------------------------------------------------------------
    def plan(self, run: str, variant: Variant, replicate: int | None) -> dict:
        """The run_queued fields of a run's start (none for an eager run)."""
        if not variant.compiled:
            return {}
        key = variant_key(variant.mode, variant.precision, variant.axes)
        if self.persistent is not None:
            start, seed = PERSISTENT, None
        elif self.source is not None and (key in self.source.runs or not self.source.auto):
            start, seed = WARM, self.source.name  # a variant the default source lacks starts cold
        elif self.policy == "rounds" and (replicate or 1) > 1 and key in self.keeper:
            start, seed = WARM, self.keeper[key]
        else:
            start, seed = COLD, None
        self.keeper.setdefault(key, run)
        self.starts[run] = (start, seed)
        return {"start": start, "seed": seed} if seed else {"start": start}

    # ---- at spawn ----------------------------------------------------------------------
    def prepare(self, run: str, variant: Variant) -> tuple[Path, dict, list[dict]]:
        """(the run's Inductor cache directory, its environment, events to record first)."""
        if self.persistent is not None:
            cache = self.persistent
        else:
            cache = self.fresh(run)
            shutil.rmtree(cache, ignore_errors=True)
        if not variant.compiled:
            return cache, {}, []
        start, seed = self.starts.get(run, (COLD, None))
        config = {"dir": str(self.artifacts(run)), "save": self._keeps(run)}
        batch = []
        if start == WARM:
            found = self._seed(variant, seed, cache)
            batch.append(events.make(events.ARTIFACTS, run, **found))
            if found["action"] == "seeded" and found["kind"] == "bundle":
                config["load"] = found["path"]
            elif found["action"] != "seeded":
                self.starts[run] = (COLD, None)
        return cache, {ARTIFACTS_ENV: json.dumps(config)}, batch

    def _keeps(self, run: str) -> bool:
        return run in self.keeper.values()

    def _seed(self, variant: Variant, seed: str | None, cache: Path) -> dict:
        """Fill ``cache`` from the seed's artifacts; the ``artifacts`` event's fields."""
        if self.source is not None:
            key = variant_key(variant.mode, variant.precision, variant.axes)
            src_run = self.source.runs.get(key)
            if src_run is None:
                return {"action": "unusable", "text": (
                    f"{self.source.name} holds no compile artifacts of {variant.label}: this run "
                    "compiles cold")}
            where, said = self.source.path / ARTIFACTS / src_run, f"{self.source.name}/{src_run}"
            origin = {"seed": self.source.name, "seed_run": src_run, "seed_path": str(self.source.path)}
        else:
            where, said = self.artifacts(seed or ""), seed
            origin = {"seed": seed}
        have = {"dir": (where / CACHE).is_dir(), "bundle": (where / BUNDLE).is_file()}
        kind = self.warm_from if have[self.warm_from] else next((k for k in KINDS if have[k]), None)
        if kind is None:
            return {"action": "unusable", **origin, "text": (
                f"no compile artifacts in {where} (the run {said} kept none: it failed, was stopped "
                "before compiling, or they were deleted): this run compiles cold")}
        fields = {"action": "seeded", "kind": kind, **origin}
        if kind != self.warm_from:
            fields["text"] = (f"{said} has no {'cache directory' if self.warm_from == 'dir' else 'bundle'}"
                              f": its {'bundle' if kind == 'bundle' else 'cache directory'} instead")
        t0 = time.monotonic()
        if kind == "bundle":
            cache.mkdir(parents=True, exist_ok=True)
            fields.update(path=str(where / BUNDLE), bytes=(where / BUNDLE).stat().st_size, files=1)
        else:
            try:
                shutil.copytree(where / CACHE, cache, ignore=IGNORE, symlinks=True)
            except (OSError, shutil.Error) as exc:
                shutil.rmtree(cache, ignore_errors=True)
                return {"action": "unusable", **origin, "text": (
                    f"cannot copy {where / CACHE}: {getattr(exc, 'strerror', None) or exc}: this run "
                    "compiles cold")}
            fields["bytes"], fields["files"] = size_of(cache)
        fields["seconds"] = round(time.monotonic() - t0, 3)
        return fields

    # ---- at the end ----------------------------------------------------------------------
    def finish(self, run: str, compiled_something: bool) -> dict | None:
        """A run has exited: the variant's first run keeps its cache as the variant's artifacts
        (the ``kept`` event); any other fresh cache is deleted."""
        if self.persistent is not None:
            return None
        cache = self.fresh(run)
        if not (self._keeps(run) and compiled_something and cache.is_dir()):
            shutil.rmtree(cache, ignore_errors=True)
            return None
        where = self.artifacts(run)
        try:
            where.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(where / CACHE, ignore_errors=True)
            os.replace(cache, where / CACHE)
        except OSError as exc:
            shutil.rmtree(cache, ignore_errors=True)
            return events.make(events.ARTIFACTS, run, action="unusable", text=(
                f"cannot keep the compile cache in {where}: {exc.strerror or exc}"))
        dir_bytes, files = size_of(where / CACHE)
        bundle = where / BUNDLE
        return events.make(events.ARTIFACTS, run, action="kept", path=str(where), dir_bytes=dir_bytes,
                           files=files, bundle_bytes=bundle.stat().st_size if bundle.is_file() else None)


def warm_starts(session: Path, plan) -> WarmStarts:
    """The supervisor's WarmStarts for a Plan (its ``warm`` settings, its ``cache_dir``)."""
    warm = plan.warm or {}
    source = None
    if warm.get("source"):
        found = warm["source"]
        source = Source(Path(found["path"]), found["session"], auto=bool(found.get("auto")))
        for run, info in (found.get("runs") or {}).items():
            source.runs.setdefault(variant_key(info.get("mode"), info.get("precision"),
                                               info.get("axes") or {}), run)
    return WarmStarts(session, policy=warm.get("policy", "rounds"), warm_from=warm.get("from", "dir"),
                      persistent=plan.cache_dir, source=source)


def initial_rounds(plan) -> list[tuple[Variant, int | None]]:
    """(variant, round) of a plan's runs, round-major (None: one process a variant); --warm with
    one process a variant adds a second round of its compiled variants alone, warm; --until-known
    queues round 1 alone (control/until_known.py queues the others, one at a time)."""
    if plan.answer.get("until_known"):
        return [(v, 1) for v in plan.variants]
    if plan.repeats > 1:
        return [(v, k) for k in range(1, plan.repeats + 1) for v in plan.variants]
    if not (plan.warm or {}).get("extra"):
        return [(v, None) for v in plan.variants]
    return [(v, 1) for v in plan.variants] + [(v, 2) for v in plan.variants if v.compiled]
