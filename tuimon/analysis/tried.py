"""``tuimon try``, decided: which fixes a session's findings call for, priced and in order
(``plan``), and what each raced one did against its variant without it (``outcomes``); words are
report/try_text.py's. A fix rides on its variant as the axis ``fix`` (tuimon/fixes.py), so its
speedup is the axis comparison's (stats/axes.py) and its break-even the eager comparison's."""

from __future__ import annotations

from dataclasses import dataclass

from tuimon import fixes
from tuimon.analysis.stats import RunStats, SessionSummary
from tuimon.analysis.stats.candidates import MIN_STEADY
from tuimon.analysis.stats.live import not_yet
from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.stats.rows import columns
from tuimon.analysis.why.finding import Finding
from tuimon.analysis.why.price import Price

# A cold compile is one measurement a variant (no interval): a fix "helped the start" only when
# it cut the compile by this much, well beyond the few % two cold compiles of one graph differ.
START_CUT = 1.5


@dataclass(frozen=True)
class Candidate:
    fix: str
    # The most a step loses to the findings it answers, a start's compile spread over the run's
    # steps (Price.per_step_ms; the order of the plan); None: unpriced
    price_ms: float | None
    answers: tuple[str, ...]  # those findings' codes
    cannot: str | None = None  # why it cannot apply here; None: it is raced
    repeated: dict | None = None  # regional's: the base's repeated block (None: not known)
    price: Price | None = None  # the costliest finding's price (words: report/price_text.py)
    seen_in: str | None = None  # a shared fix's: the row whose findings call for it, not the base


@dataclass(frozen=True)
class TryPlan:
    base: RunStats  # the row the fixes are applied to: the session's best compiled variant
    candidates: tuple[Candidate, ...]  # the raced first, the costliest first; then the others

    @property
    def raced(self) -> list[str]:
        return [c.fix for c in self.candidates if c.cannot is None]

    @property
    def base_fixes(self) -> tuple[str, ...]:
        """Fixes the base itself already had (a try of a tried variant): kept under every fix."""
        return fixes.parse(self.base.axes.get(fixes.AXIS, fixes.NONE))

    def axis_values(self) -> list[str]:
        """The fix axis's values: the base as it is first (the axis baseline), then each fix."""
        own = self.base_fixes
        return [fixes.join(own)] + [fixes.join((*own, f)) for f in self.raced]


def pick_base(summary: SessionSummary) -> RunStats | None:
    """The session's best compiled variant (the fastest against its eager run), else its
    fastest row; None when nothing was timed."""
    timed = [r for r in columns(summary) if r.timing.median_ms and r.status != "failed"]
    compiled = [r for r in timed if r.compiled and not r.compile.nothing_compiled]
    if compiled:
        return max(compiled, key=lambda r: (r.compare.speedup or 0.0, -r.timing.median_ms))
    return min(timed, key=lambda r: r.timing.median_ms) if timed else None


def plan(summary: SessionSummary, whys: list, *, only: list[str] | None = None,
         is_script: bool = False) -> TryPlan | None:
    """What ``tuimon try`` races for this session: the fixes its base row's findings (``whys``:
    analysis.why.diagnose's) call for, or ``only`` those named; None when no row was timed."""
    base = pick_base(summary)
    if base is None:
        return None
    findings = [f for w in whys if w.run == base.run for f in w.findings]
    answered: dict[str, list] = {}
    for f in findings:
        for name in suggests(f):
            answered.setdefault(name, []).append(f)
    seen_in = shared_findings(summary, whys, base, answered)
    names = [n for n in (only if only is not None else answered) if n not in plan_base_fixes(base)]
    on_cuda = (base.device or "").startswith("cuda")
    out = []
    for name in names:
        found = answered.get(name, [])
        prices = [p for p in map(price_of, found) if p is not None]
        top = max(prices, key=lambda p: p.per_step_ms(run_steps(base)), default=None)
        reason = fixes.cannot(fixes.FIXES[name], on_cuda=on_cuda, is_script=is_script,
                              compiled=base.compiled) or blockless(name, base.repeated)
        out.append(Candidate(name, top.per_step_ms(run_steps(base)) if top else None,
                             tuple(dict.fromkeys(f.code for f in found)), reason,
                             base.repeated if name == REGIONAL else None, top, seen_in.get(name)))
    out.sort(key=lambda c: (c.cannot is not None, c.price_ms is None, -(c.price_ms or 0.0)))
    return TryPlan(base, tuple(out))


def shared_findings(summary: SessionSummary, whys: list, base: RunStats,
                    answered: dict[str, list]) -> dict[str, str]:
    """A shared fix (the loader) that the base's own findings do not call for, called for by
    another row's with the base's axes: the eager run waits 20 % of its step on the same
    DataLoader that feeds the compiled one, whose slower or noisier step may fall under Why's
    share. Its findings added to ``answered``; the row each came from, by fix."""
    rows = {r.run: r for r in columns(summary)}
    def knobs(r: RunStats) -> dict:
        return {k: v for k, v in r.axes.items() if k != fixes.AXIS}

    axes = knobs(base)
    seen: dict[str, str] = {}
    for w in whys:
        row = rows.get(w.run)
        if w.run == base.run or row is None or knobs(row) != axes:
            continue
        for f in w.findings:
            for name in suggests(f):
                if fixes.FIXES[name].shared and (name not in answered or name in seen):
                    answered.setdefault(name, []).append(f)
                    seen.setdefault(name, row.label)
    return seen


def run_steps(r: RunStats) -> int | None:
    """The steps one start of the row is spread over: its asked length, else its steps a process
    (a combined row's processes each started once)."""
    if r.timing.length_steps:
        return r.timing.length_steps
    return r.timing.steps // max(1, len(r.processes)) if r.timing.steps else None


def price_of(f: Finding) -> Price | None:
    """A finding's price (diagnose sets it), else its step cost alone."""
    return f.price or (Price(f.cost_ms) if f.cost_ms is not None else None)


def plan_base_fixes(base: RunStats) -> tuple[str, ...]:
    return fixes.parse(base.axes.get(fixes.AXIS, fixes.NONE))


def suggests(f: Finding) -> list[str]:
    """The fixes a finding (analysis.why's) calls for: those its code or its advice answer
    (whether each can apply to a row: fixes.cannot, blockless)."""
    return fixes.suggested([f.what.code, *(p.code for p in f.advice)])


# ---- regional needs a repeated block -----------------------------------------------------------
REGIONAL = "regional"
NO_BLOCK = "no_block"  # why regional cannot apply: the child found no repeated block (words: report)


def blockless(name: str, repeated: dict | None) -> str | None:
    """NO_BLOCK when ``name`` is regional and the model is known to repeat no block (a compiled
    run's note: runner/fixes.py repeated_note); None otherwise, unknown included."""
    if name == REGIONAL and repeated is not None and int(repeated.get("count") or 0) < 2:
        return NO_BLOCK
    return None


# ---- the TUI's t: one finding's fix on the focused variant --------------------------------------
ALREADY = "already"  # a reason a suggested fix is passed over: the variant has it (words: report)


@dataclass(frozen=True)
class Pick:
    fix: str | None  # the first suggested fix that applies here; None: none does
    value: str | None  # the fixed variant's fix axis: its own fixes and this one ("dynamic+regional")
    passed: tuple[tuple[str, str], ...] = ()  # the suggested fixes before it (or all), and why not
    repeated: dict | None = None  # regional's: the variant's repeated block (None: not known)


def pick(suggested: list[str], own: tuple[str, ...] = (), *, on_cuda: bool, is_script: bool,
         compiled: bool, repeated: dict | None = None) -> Pick:
    """Which of a finding's fixes (``suggested``, the registry's order) the TUI's t adds to a
    variant that already has ``own``: the first that can apply to it (fixes.cannot; regional
    not on a model known to repeat no block: ``repeated``, the row's)."""
    passed = []
    for name in suggested:
        why = ALREADY if name in own else fixes.cannot(
            fixes.FIXES[name], on_cuda=on_cuda, is_script=is_script,
            compiled=compiled) or blockless(name, repeated)
        if why is None:
            return Pick(name, fixes.join((*own, name)), tuple(passed),
                        repeated if name == REGIONAL else None)
        passed.append((name, why))
    return Pick(None, None, tuple(passed))


# ---- what each fix did --------------------------------------------------------------------------
HELPED, START, NO_BETTER, WORSE, FAILED, NOT_APPLIED, CANNOT_TELL, PENDING = (
    "helped", "helped_start", "no_better", "worse", "failed", "not_applied", "cannot_tell",
    "pending")  # pending: its run goes on and has no step compared yet (a live view's, the TUI's t)


@dataclass(frozen=True)
class Outcome:
    fix: str  # the axis value ("regional", "regional+dynamic")
    run: str
    label: str
    code: str  # one of the codes above
    speedup: float | None = None  # its step against the same variant without it
    speedup_lo: float | None = None
    speedup_hi: float | None = None
    untold: Point | None = None  # the speedup's interval too wide for its figure (noise.untold)
    compile_s: float | None = None  # its first (cold or warm) compile, and the base's
    base_compile_s: float | None = None
    start: str | None = None  # "cold" / "warm" / "persistent" when both compiles started alike
    breakeven_s: float | None = None  # against eager, and the base's
    base_breakeven_s: float | None = None
    breakeven_never: bool = False
    base_breakeven_never: bool = False
    peak_bytes: int | None = None  # peak memory (CUDA allocated, else the process's RSS)
    base_peak_bytes: int | None = None
    # The largest loss difference from eager over the steps both ran: (the base's, the fix's)
    loss_diff: tuple[float | None, float | None] = (None, None)
    recompiles: tuple[int, int] = (0, 0)  # (base, fix)
    breaks: tuple[int, int] = (0, 0)
    not_applied: str | None = None  # what the child said of a fix it could not apply
    error: str | None = None
    unsure: tuple[Point, ...] = ()  # CANNOT_TELL's reasons: LOAD, DOUBTS, FEW, ONE, WIDE (below)


def outcomes(summary: SessionSummary) -> list[Outcome]:
    """Each fixed row against its variant without the fix, in the session's order."""
    rows = columns(summary)
    out = []
    for r in rows:
        value = r.axes.get(fixes.AXIS)
        if value is None:
            continue
        home = (summary.axes.get(fixes.AXIS) or [fixes.NONE])[0]
        if any(fixes.AXIS not in b.axes for b in rows):
            home = fixes.NONE  # a fix added beside runs without the axis (the TUI's t)
        if value == home:
            continue
        without = fixes.plain({**r.axes, fixes.AXIS: home})
        base = next((b for b in rows if b.mode == r.mode and b.precision == r.precision
                     and fixes.plain(b.axes) == without), None)
        out.append(outcome(value, r, base, summary))
    return out


def outcome(value: str, r: RunStats, base: RunStats | None, summary: SessionSummary) -> Outcome:
    c = r.compare
    figures = dict(
        fix=value, run=r.run, label=r.label, speedup=c.axis_speedup, speedup_lo=c.axis_speedup_lo,
        speedup_hi=c.axis_speedup_hi, untold=c.axis_untold, compile_s=r.compile.compile_s,
        base_compile_s=base.compile.compile_s if base else None,
        start=start_of(r) if base and start_of(r) == start_of(base) else None,
        breakeven_s=c.breakeven_s,
        base_breakeven_s=base.compare.breakeven_s if base else None,
        breakeven_never=c.breakeven_never,
        base_breakeven_never=base.compare.breakeven_never if base else False, peak_bytes=peak(r),
        base_peak_bytes=peak(base) if base else None,
        recompiles=(base.compile.recompiles if base else 0, r.compile.recompiles),
        breaks=(breaks(base) if base else 0, breaks(r)),
        not_applied=not_applied(r),
        loss_diff=(base.loss.max_loss_diff if base else None, r.loss.max_loss_diff))
    if r.status == "failed":
        return Outcome(code=FAILED, error=r.failure.error, **figures)
    if figures["not_applied"]:
        return Outcome(code=NOT_APPLIED, **figures)
    if r.status in ("queued", "running") and c.axis_speedup is None:
        return Outcome(code=PENDING, **figures)
    if reasons := unsure(summary, r, base):
        return Outcome(code=CANNOT_TELL, unsure=reasons, **figures)
    lo, hi = c.axis_speedup_lo, c.axis_speedup_hi
    if lo is not None and lo > 1.0:
        code = HELPED
    elif hi is not None and hi < 1.0:
        code = WORSE
    elif (figures["compile_s"] and figures["base_compile_s"]
          and figures["base_compile_s"] / figures["compile_s"] >= START_CUT):
        code = START
    else:
        code = NO_BETTER
    return Outcome(code=code, **figures)


# Why a fix's step cannot be told: the machine's load (the session was busy, or other processes'
# load differed between a row and its baseline), the rows' other doubts (recompiles after
# warm-up, page faults), too few steady steps for an interval, an interval across 1.00× too wide
# to tell (noise.untold: its point is the reason), or one process a variant: an interval that
# leaves 1.00× out rests on an assumed spread between processes, and the effect is smaller than
# what the session says one process a variant can tell.
LOAD, DOUBTS, FEW, ONE, WIDE = "load", "doubts", "few_steps", "one_process", "untold"


def unsure(summary: SessionSummary, r: RunStats, base: RunStats | None) -> tuple[Point, ...]:
    """Why the fix's step against its variant without it cannot be told, each reason typed (a
    point: LOAD with the session's ``busy`` or a row's ``label`` and ``doubts``, DOUBTS with a
    row's, FEW with the ``steps`` measured of the ``need``ed); () when it can. --quiet-only's
    dropped steps are no reason: the steps kept met no load."""
    out = []
    if summary.busy is not None and summary.busy.code == "busy":
        out.append(point(LOAD, busy=summary.busy))
    for row in (base, r):
        for code, mine in ((LOAD, [d for d in (row.doubts if row else []) if d.code == "load_differs"]),
                           (DOUBTS, [d for d in (row.doubts if row else []) if d.code != "load_differs"])):
            if mine:
                out.append(point(code, label=row.label, doubts=mine))
    few = not_yet(r, base)
    if few or r.compare.axis_speedup is None or r.compare.axis_speedup_lo is None:
        out.append(point(FEW, steps=few[0] if few else None, need=MIN_STEADY))
    elif (wide := r.compare.axis_untold) is not None and wide.get("side") is None:
        out.append(wide)  # across 1.00× and too wide: "no better beyond noise" would be a guess
    elif not out and (small := unmeasured(summary, r)):  # the last doubt: said only alone
        out.append(small)
    return tuple(out)


def unmeasured(summary: SessionSummary, r: RunStats) -> Point | None:
    """ONE when each side is one process (the spread between processes assumed, not measured),
    the interval leaves 1.00× out, and the speedup is within what the session can tell: a
    quiet VM gave two fixes that change nothing on a static MLP "1.35× faster (95 % CI
    1.01–1.81)" against one slow process of the variant without them (bench/RESULTS.md)."""
    n, plan, c = summary.noise, summary.plan, r.compare
    if n is None or n.measured or not plan or not plan.get("detectable_pct"):
        return None
    if not ((c.axis_speedup_lo or 0) > 1.0 or (c.axis_speedup_hi or 2) < 1.0):
        return None  # no better beyond noise: an answer, whatever the spread
    if max(c.axis_speedup, 1 / c.axis_speedup) - 1 >= plan["detectable_pct"] / 100:
        return None  # beyond what one process a variant can tell: told
    return point(ONE, assumed_pct=round(n.pct), tells_pct=round(plan["detectable_pct"]))


def start_of(r: RunStats) -> str | None:
    """How the compile the row's compile_s is started: its own start, or a combined row's first
    (stats/warm.py puts the cold processes' figures first)."""
    return r.warm.start or next(iter(r.warm.starts), None)


def peak(r: RunStats) -> int | None:
    return r.probes.cuda_peak_allocated or r.probes.peak_rss


def breaks(r: RunStats) -> int:
    return sum(int(b.get("count") or 1) for b in r.compile.graph_breaks)


def not_applied(r: RunStats) -> str | None:
    """The child's word on a fix it could not apply (run_started ``fixes``), else None."""
    said = {name: got.get("text") or "not applied" for name, got in (r.fixes or {}).items()
            if isinstance(got, dict) and not got.get("applied", True)}
    if len(r.fixes or {}) == 1:  # one fix: its word alone
        return next(iter(said.values()), None)
    return "; ".join(f"{name}: {text}" for name, text in said.items()) or None


def winners(found: list[Outcome]) -> list[str]:
    """The fixes that made the step faster beyond noise, the best first: raced together next."""
    helped = [o for o in found if o.code == HELPED and "+" not in o.fix]
    return [o.fix for o in sorted(helped, key=lambda o: -(o.speedup or 0.0))]
