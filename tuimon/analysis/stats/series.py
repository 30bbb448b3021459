"""A run's step times (or losses) over its whole life in bounded memory, for the charts: steps of
one kind fold into buckets (count, span, min, max, a sorted sample of at most ``SAMPLE``), never
straddling a pause or a change of kind; past ``CAP`` buckets neighbours merge, so any length
costs the same. ``columns`` bins them into a chart's columns, ``axis_top`` says where it clips."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tuimon.analysis.stats.intervals import percentile

CAP = 512  # buckets held per series
WINDOW = 16  # steps at least behind a column's median and band: its rolling window
SAMPLE = 32  # order statistics kept per bucket
KINDS = ("compile", "warmup", "profiled", "gap", "steady")  # a merged bucket keeps the first
RANK = {kind: k for k, kind in enumerate(KINDS)}


def step_kind(step: dict) -> str:
    """What a step was, for the charts (the steady-state rules are steady_state.is_measured)."""
    if step.get("compile_ms"):
        return "compile"
    if step.get("gap"):
        return "gap"
    if step.get("profiled") or step.get("mem"):  # a memory step: measured, like a capture's
        return "profiled"
    return "steady" if step.get("phase") == "steady" else "warmup"


@dataclass(slots=True)
class Bucket:
    i0: int  # first step index
    i1: int  # last step index
    t0: float  # wall clock at the start of its first step
    t1: float  # wall clock at the end of its last step
    n: int
    kind: str
    lo: float
    hi: float
    sample: list[float]  # sorted; every order statistic while n <= SAMPLE
    p10: float = 0.0
    p50: float = 0.0
    p90: float = 0.0

    def settle(self) -> None:
        self.p10 = percentile(self.sample, 0.10)
        self.p50 = percentile(self.sample, 0.50)
        self.p90 = percentile(self.sample, 0.90)


def _thin(values: list[float]) -> list[float]:
    """At most SAMPLE evenly spaced order statistics of a sorted list (min and max kept)."""
    n = len(values)
    if n <= SAMPLE:
        return values
    return [values[round(k * (n - 1) / (SAMPLE - 1))] for k in range(SAMPLE)]


class StepSeries:
    """One run's series (step ms, or loss). ``add`` costs an append; a bucket is sorted once
    when it closes. ``buckets()`` is the closed buckets plus the one still filling."""

    def __init__(self, cap: int = CAP) -> None:
        self.cap = cap
        self.width = 1  # steps per bucket
        self.closed: list[Bucket] = []
        self._open: list[float] = []
        self._head: tuple | None = None  # (i0, t0, kind) of the open bucket
        self._last_i, self._last_t = 0, 0.0  # its last step's index and end
        self._break = False  # a pause happened: the next step starts a new bucket
        self._cache: list[Bucket] | None = None
        self._opened: Bucket | None = None  # the open bucket, settled (until the next add)
        self._gen = 0  # bumped when buckets merge: binnings made before are void
        self._binned: dict[tuple, _Binned] = {}  # per chart axis: the closed buckets binned
        self.count = 0

    def add(self, i: int, t_end: float, ms: float, value: float, kind: str) -> None:
        """A step: its index, its end (wall clock), its duration (ms) and the value charted."""
        self.count += 1
        self._cache = self._opened = None
        head = self._head
        if head is None or kind != head[2] or self._break or len(self._open) >= self.width:
            if head is not None:
                self._close()
            self._head = (i, t_end - ms / 1000.0, kind)
            self._break = False
        self._open.append(value)
        self._last_i, self._last_t = i, t_end

    def pause(self) -> None:
        """A pause or a turn wait began: no bucket spans it."""
        self._break = True

    def buckets(self) -> list[Bucket]:
        if self._cache is None:
            opened = self.open_bucket() if self._open else None
            self._cache = self.closed + ([opened] if opened is not None else [])
        return self._cache

    def open_bucket(self) -> Bucket | None:
        if self._opened is None and self._open:
            self._opened = self._bucket()
        return self._opened

    def columns(self, x0: float, x1: float, ncols: int, by: str = "t",
                window: int = WINDOW) -> list[Column | None]:
        """``columns(self.buckets(), ...)``, incrementally: a chart redrawn on the same axis
        bins only the buckets closed since its last drawing (and the open one)."""
        key = (x0, x1, ncols, by)
        e = self._binned.get(key)
        if e is None or e.gen != self._gen:
            if len(self._binned) >= 8:
                del self._binned[next(iter(self._binned))]
            e = self._binned[key] = _Binned(self._gen, ncols)
        scale = ncols / ((x1 - x0) or 1.0)
        cols, dirty, last = e.cols, e.dirty, ncols - 1
        for b in self.closed[e.done:]:  # all of them when the axis changed: kept lean
            if by == "t" and b.kind != "compile":  # _place's common case, inline
                c = int((b.t1 - x0) * scale)
                if c >= 0:
                    c = last if c > last else c
                    cols[c].append(b)
                    dirty.add(c)
                continue
            if by == "i":  # one column by step index (a bucket narrower than a column): inline
                c = int((b.i0 - x0) * scale)
                if c == int((b.i1 + 1 - x0) * scale - 1e-9) and 0 <= c <= last:
                    cols[c].append(b)
                    dirty.add(c)
                    continue
            for c in _place(b, x0, scale, last, by):
                cols[c].append(b)
                dirty.add(c)
        e.done = len(self.closed)
        for c in e.dirty:
            e.out[c] = _column(e.cols[c]) if e.cols[c] else None
        e.dirty = set()
        out = list(e.out)
        opened = self.open_bucket()
        if opened is not None:
            for c in _place(opened, x0, scale, ncols - 1, by):
                out[c] = _column(e.cols[c] + [opened])
        return _rolling(out, e.cols, opened, window, x0, scale, by)

    def _bucket(self) -> Bucket:
        values = sorted(self._open)
        assert self._head is not None  # set with the open bucket's first value
        i0, t0, kind = self._head
        b = Bucket(i0, self._last_i, t0, self._last_t, len(values), kind, values[0], values[-1],
                   _thin(values))
        b.settle()
        return b

    def _close(self) -> None:
        self.closed.append(self._bucket())
        self._open, self._head = [], None
        if len(self.closed) > self.cap:
            self._compact()

    def _compact(self) -> None:
        strict = True
        while len(self.closed) > self.cap * 3 // 4:
            self.width *= 2
            self.closed = _merge_neighbours(self.closed, self.width, strict)
            self._gen += 1
            strict = False  # a second pass merges across kinds and pauses too


def _merge_neighbours(buckets: list[Bucket], width: int, strict: bool) -> list[Bucket]:
    out: list[Bucket] = []
    for b in buckets:
        prev = out[-1] if out else None
        if prev is not None and prev.n + b.n <= width and (
                not strict or (prev.kind == b.kind and b.i0 == prev.i1 + 1 and b.t0 - prev.t1 < 1.0)):
            out[-1] = _merged(prev, b)
        else:
            out.append(b)
    return out


def _merged(a: Bucket, b: Bucket) -> Bucket:
    kind = min(a.kind, b.kind, key=KINDS.index)
    m = Bucket(a.i0, b.i1, a.t0, b.t1, a.n + b.n, kind, min(a.lo, b.lo), max(a.hi, b.hi),
               _thin(sorted(a.sample + b.sample)))
    m.settle()
    return m


@dataclass(slots=True)
class Column:
    """What one chart column shows: the steps that fall in it."""
    n: int
    kind: str  # the first of KINDS among its buckets
    p10: float
    p50: float
    p90: float
    hi: float
    lo: float
    single: bool  # exactly one step: drawn as a point


class _Binned:
    """One chart axis's binning of a series' closed buckets, kept between redraws."""

    __slots__ = ("cols", "dirty", "done", "gen", "out")

    def __init__(self, gen: int, ncols: int) -> None:
        self.gen, self.done = gen, 0
        self.cols: list[list[Bucket]] = [[] for _ in range(ncols)]
        self.out: list[Column | None] = [None] * ncols
        self.dirty: set[int] = set()


def _place(b: Bucket, x0: float, scale: float, last: int, by: str) -> range:
    """The columns a bucket falls in: where it ended (a compile step: every column its span
    covers, on a time axis)."""
    if by == "t":
        if b.kind == "compile":
            c0, c1 = int((b.t0 - x0) * scale), int((b.t1 - x0) * scale - 1e-9)
        else:
            c0 = c1 = min(last, int((b.t1 - x0) * scale))
    else:
        c0, c1 = int((b.i0 - x0) * scale), int((b.i1 + 1 - x0) * scale - 1e-9)
    if c1 < 0 or c0 > last:
        return range(0)
    return range(max(0, c0), min(last, max(c0, c1)) + 1)


def columns(buckets: list[Bucket], x0: float, x1: float, ncols: int, by: str = "t",
            window: int = WINDOW) -> list[Column | None]:
    """Buckets binned into ``ncols`` columns spanning [x0, x1] (by step index ``i`` or wall
    time ``t``). A column's median and p10–p90 are rolling: over its own steps when it holds
    ``window`` or more (the count-weighted means of its buckets'), else over the steps of the
    same kind in the nearest columns, up to 1/24 of the chart each side, until ``window``
    steps are in. Its max, min and count are its own. A bucket wider than a column (a compile
    step of seconds, on a time axis) fills every column it spans."""
    cols: list[list[Bucket]] = [[] for _ in range(ncols)]
    scale = ncols / ((x1 - x0) or 1.0)
    for b in buckets:
        for c in _place(b, x0, scale, ncols - 1, by):
            cols[c].append(b)
    return _rolling([_column(bs) if bs else None for bs in cols], cols, None, window, x0, scale, by)


def _rolling(out: list[Column | None], cols: list[list[Bucket]], opened: Bucket | None,
             window: int, x0: float, scale: float, by: str) -> list[Column | None]:
    """Columns of fewer than ``window`` steps take their median and band from their
    neighbours too (see ``columns``)."""
    ncols = len(out)
    extra = set(_place(opened, x0, scale, ncols - 1, by)) if opened is not None else set()

    def held(k: int) -> list[Bucket]:
        return cols[k] + [opened] if k in extra and opened is not None else cols[k]

    reach = max(1, ncols // 24)
    for c, col in enumerate(out):
        if col is None or col.n >= window or col.kind == "compile":
            continue
        pool, n = [b for b in held(c) if b.kind == col.kind], col.n
        for r in range(1, reach + 1):
            for k in (c - r, c + r):
                if 0 <= k < ncols:
                    near = [b for b in held(k) if b.kind == col.kind]
                    pool += near
                    n += sum(b.n for b in near)
            if n >= window:
                break
        if len(pool) > 1:
            values = sorted(v for b in pool for v in b.sample)
            p10, p50, p90 = (percentile(values, q) for q in (0.10, 0.50, 0.90))
            out[c] = Column(col.n, col.kind, p10, p50, p90, col.hi, col.lo, col.single)
    return out


def _column(bs: list[Bucket]) -> Column:
    if len(bs) == 1:
        b = bs[0]
        return Column(b.n, b.kind, b.p10, b.p50, b.p90, b.hi, b.lo, b.n == 1)
    n, p10, p50, p90, hi, lo, rank = 0, 0.0, 0.0, 0.0, -math.inf, math.inf, len(KINDS)
    for b in bs:  # one pass: this runs for every column of every chart
        k = b.n
        n += k
        p10 += b.p10 * k
        p50 += b.p50 * k
        p90 += b.p90 * k
        if b.hi > hi:
            hi = b.hi
        if b.lo < lo:
            lo = b.lo
        if (r := RANK[b.kind]) < rank:
            rank = r
    return Column(n, KINDS[rank], p10 / n, p50 / n, p90 / n, hi, lo, False)


def axis_range(cols: list[Column | None], log: bool = False) -> tuple[float, float] | None:
    """(bottom, top) of a chart's y axis: its columns' p10–p90 bands, the far-out ones (past
    Tukey's outer fence of the band tops, q75 + 3·IQR, with an IQR of at least a tenth of the
    median) left out. Compile columns never scale it. Steps above the top are outliers."""
    shown = [c for c in cols if c is not None and c.kind != "compile"]
    if not shown:
        shown = [c for c in cols if c is not None]
    if not shown:
        return None
    tops = sorted(c.p90 for c in shown)
    q25, q50, q75 = (percentile(tops, q) for q in (0.25, 0.5, 0.75))
    fence = q75 + 3 * max(q75 - q25, 0.1 * abs(q50))
    top = max((x for x in tops if x <= fence), default=tops[0])
    bottom = min(c.p10 for c in shown)
    if log:
        bottom = min((c.lo for c in shown if c.lo > 0), default=bottom)
    return bottom, top
