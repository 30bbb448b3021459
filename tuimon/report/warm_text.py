"""Warm start in words: a compiled variant's compile figures per start, cold and warm side by
side ("cold: 47.2 s · warm: 4.6 s"), its caches' hits and misses, its compile artifacts, and
why a warm start missed. Laid out from what analysis/stats/warm.py computed."""

from __future__ import annotations

from dataclasses import replace

from tuimon.analysis import RunStats, SessionSummary, cache_counts, columns
from tuimon.fmt import DASH, fmt_bytes, fmt_s
from tuimon.report.document import DETAIL, Line
from tuimon.report.miss_text import miss_text


def as_start(r: RunStats, start: str) -> RunStats:
    """``r`` with one start's compile figures in place of its own (a copy, for the formatters)."""
    fig = r.warm.starts[start]
    first = start == _first(r) and not fig.get("session")  # a carried start has no interval here
    return replace(
        r, compile=replace(r.compile, compile_s=fig["compile_s"], compile_phases=dict(fig["phases"])),
        timing=replace(r.timing, overhead_s=fig["overhead_s"], first_step_ms=fig["first_step_ms"]),
        compare=replace(r.compare, breakeven_steps=fig["breakeven_steps"], breakeven_s=fig["breakeven_s"],
                        breakeven_never=fig["breakeven_never"],
                        breakeven_lo=r.compare.breakeven_lo if first else None,
                        breakeven_hi=r.compare.breakeven_hi if first else None),
        warm=replace(r.warm, cache=fig["cache"], start=start))


def _name(r: RunStats, start: str) -> str:
    """A start's name in a row: a cold start carried from another session says so."""
    return f"{start} (earlier)" if r.warm.starts[start].get("session") else start


def _first(r: RunStats) -> str | None:
    return next(iter(r.warm.starts), None)


def per_start(fn):
    """A row's text per start: "cold: X · warm: Y" when a variant ran both; a warm start alone
    is named (a --cache-dir's persistent cache is said in the summary's header)."""
    def text(r: RunStats) -> str:
        if len(r.warm.starts) > 1:
            texts = {start: fn(as_start(r, start)) for start in r.warm.starts}
            if all(t in (DASH, "") for t in texts.values()):
                return DASH
            return " · ".join(f"{_name(r, start)}: {t or DASH}" for start, t in texts.items())
        out = fn(r)
        start = _first(r) or r.warm.start
        return f"{out} (warm)" if start == "warm" and out != DASH else out
    return text


def cache_text(r: RunStats) -> str:
    """The caches a compile found: FX graphs and AOTAutograd entries hit of looked up, kernels
    compiled (a kernel found in the cache is not compiled)."""
    if not r.compiled:
        return DASH
    parts = []
    for which, name in (("fx", "FX graph"), ("aot", "AOTAutograd")):
        c = cache_counts(r.warm.cache, which)
        looked = sum(c.values())
        if looked:
            bypass = f", {c['bypass']} bypassed" if c.get("bypass") else ""
            parts.append(f"{name} {c.get('hit', 0)}/{looked} hits{bypass}")
    if "kernels" in r.warm.cache:
        n = r.warm.cache["kernels"]
        spent = f" ({fmt_s(r.warm.cache['kernel_s'])})" if n and r.warm.cache.get("kernel_s") else ""
        parts.append(f"{n} kernel{'s' if n != 1 else ''} compiled{spent}")
    if parts:
        return " · ".join(parts)
    if r.compile.fx_cache_hits or r.compile.fx_cache_misses:  # a session recorded before lookups were kept
        fx = r.compile
        return f"FX graph {fx.fx_cache_hits}/{fx.fx_cache_hits + fx.fx_cache_misses} hits"
    return DASH


def artifacts_text(r: RunStats) -> str:
    """What a variant keeps to start warm: its cache directory and torch's bundle, and sizes."""
    a = r.warm.artifacts
    parts = []
    if a.get("dir_bytes") is not None:
        parts.append(f"cache {fmt_bytes(a['dir_bytes'])} ({a.get('files', 0)} files)")
    if a.get("bundle_bytes"):
        parts.append(f"bundle {fmt_bytes(a['bundle_bytes'])}")
    seeded = a.get("seeded")
    if seeded:
        parts.append(f"started from {seeded.get('seed')}'s {seeded.get('kind')} "
                     f"({fmt_bytes(seeded.get('bytes'))}, {fmt_s(seeded.get('seconds'))} to copy)"
                     if seeded.get("kind") == "dir" else
                     f"started from {seeded.get('seed')}'s bundle ({fmt_bytes(seeded.get('bytes'))})")
    loaded = a.get("loaded")
    if loaded and loaded.get("seconds") is not None:
        parts.append(f"bundle loaded in {fmt_s(loaded['seconds'])}")
    return " · ".join(parts) if parts else DASH


def has_starts(summary: SessionSummary) -> bool:
    return any(r.warm.starts or r.warm.artifacts for r in columns(summary))


def warm_notes(summary: SessionSummary) -> list[Line]:
    """What became of artifacts, and why warm starts missed (a line a reason under it), per variant."""
    out = []
    for r in columns(summary):
        of = {"label": r.label, "run": r.run}
        out += [Line(DETAIL, note, of) for note in r.warm.artifact_notes]
        if r.warm.miss_reasons:
            warm = _warm(r)
            what = "missed" if any(cache_counts(warm.warm.cache, c).get("miss") for c in ("fx", "aot")) \
                else "compiled again"
            reasons = tuple(Line(DETAIL, miss_text(p), p.to_dict()) for p in r.warm.miss_reasons)
            out.append(Line(DETAIL, f"the warm start {what} ({cache_text(warm)}):", of, reasons))
    return out


def _warm(r: RunStats) -> RunStats:
    return as_start(r, "warm") if "warm" in r.warm.starts and len(r.warm.starts) > 1 else r


def start_line(summary: SessionSummary) -> str:
    """How the session's compiled runs started, after the cache line of summary.md."""
    starts = {s for r in summary.runs for s in ([r.warm.start] if r.warm.start else [])}
    carried = sorted({f["session"] for r in columns(summary) for f in r.warm.starts.values()
                      if f.get("session")})
    cold = f"; the cold compile said is {' and '.join(carried)}'s" if carried else ""
    if summary.cache_source and summary.cache_auto:
        return (f"; compiled runs started warm from {summary.cache_source}'s compile artifacts, the "
                f"last session of this code and settings{cold} (--cold compiles cold)")
    if summary.cache_source:
        return f"; compiled runs started from {summary.cache_source}'s compile artifacts (--cache-from){cold}"
    if "warm" in starts and "cold" in starts:
        return "; each compiled variant's first process compiled cold, the others warm from its artifacts"
    return ""
