"""Whether a session's answer is known (--until-known, the default for a script given no length):
what each process still needs before its round may end, whether the rounds so far answer the
question, how far the answer is, and why the session stopped. Decisions as codes and figures
(``Point``, ``Known``); report/known_text.py words them; control/until_known.py acts on them.

A round's process has what the answer needs (``process_state``) once
- it stepped and nothing compiles now (a cold compile takes the time it takes);
- its compiles have settled: ``SETTLE_STEPS`` steps since the last step that compiled (a
  recompile at step 60 starts the count again; a validation pass's compile counts too);
- in round 1 (the one that compiles cold), a script whose training DataLoader says its epoch's
  length has stepped past its first epoch's end (``EPOCH_SHARE`` of the budget at most), so the
  validation pass that usually follows it, and its compile, are weighed;
- it has ``ROUND_STEPS`` measured steps after they settled (twice MIN_STEADY: MSER-5 cuts at most
  half) and ``ROUND_S`` seconds of them (two of the default turns, so a round's processes take
  turns more than once).

The rounds answer it (``look``) once at least MIN_ROUNDS of them are paired (the spread between
processes measured) and every candidate's repeated confidence interval against the reference
(stats/sequential.py through noise.py: the verdict's own interval) excludes 1 ("faster",
"slower") or lies within ±margin ("same"); or when nothing can be weighed whatever more rounds
bring (nothing compiled, no reference, a script too short for a steady state).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, replace

from tuimon import events
from tuimon.analysis.stats.candidates import MIN_STEADY
from tuimon.analysis.stats.point import Point, point
from tuimon.analysis.stats.sequential import Design
from tuimon.analysis.stats.steady_state import is_measured

SETTLE_STEPS = 20  # steps without a compile before a process's compiles count as settled
ROUND_STEPS = 2 * MIN_STEADY  # measured steps a process needs after its compiles settled
ROUND_S = 6.0  # ... and seconds of them: two turns of the default 3 s each
# Round 1 waits for its first epoch's end only when it comes within this share of the budget.
EPOCH_SHARE = 0.5
ANSWERS = ("faster", "slower", "same", "no_answer", "unreliable")
# The verdict's codes after which more rounds cannot bring an answer (stats/verdict.py).
HOPELESS = ("no_reference", "reference_unmeasured", "nothing_compiled", "too_few")


class ProcessTrack:
    """One process's steps as --until-known weighs them, folded one event at a time (O(1))."""

    def __init__(self) -> None:
        self.steps = 0  # step events
        self.last_i = -1
        self.since_compile = 0  # steps since the last one that compiled
        self.settled = 0  # measured steps since the compiles settled
        self.settled_s = 0.0  # ... and their seconds
        self.epoch: int | None = None  # steps in its first epoch, when its DataLoader says
        self.gaps = 0  # steps that held a validation pass
        self.recent: deque[float] = deque(maxlen=32)  # recent step times (ms), for the estimate

    def add(self, e: dict) -> None:
        kind = e["type"]
        if kind == events.ANATOMY and e.get("epoch"):
            calls = e.get("backwards") or {"1": 1}  # backward() calls a step -> steps: its batches
            per_step = int(max(calls, key=lambda k: calls[k])) or 1
            self.epoch = math.ceil(e["epoch"] / per_step)
        if kind != events.STEP:
            return
        self.steps += 1
        self.last_i = e["i"]
        self.gaps += bool(e.get("gap"))
        if e.get("compile_ms"):
            self.since_compile = self.settled = 0
            self.settled_s = 0.0
            return
        self.since_compile += 1
        self.recent.append(e["ms"])
        if self.since_compile > SETTLE_STEPS and is_measured(e):
            self.settled += 1
            self.settled_s += e["ms"] / 1000.0

    @property
    def step_s(self) -> float | None:
        """Its recent median step, in seconds."""
        if not self.recent:
            return None
        ordered = sorted(self.recent)
        return ordered[len(ordered) // 2] / 1000.0


def process_state(track: ProcessTrack, compiling: bool, first_round: bool,
                  budget_s: float | None) -> Point:
    """What one process still needs before its round may end: ``building`` (no step yet),
    ``compiling``, ``settling`` (``left`` steps without a compile), ``epoch`` (round 1: steps up to
    its first epoch's end, ``at``), ``steps`` (``left`` measured steps, ``left_s`` seconds), or
    ``ready``; each with ``eta_s``, the stepping seconds it needs at its recent step (None: unknown)."""
    step = track.step_s
    if compiling:
        return point("compiling", eta_s=None)
    if not track.steps:
        return point("building", eta_s=None)
    if track.since_compile < SETTLE_STEPS:
        left = SETTLE_STEPS - track.since_compile + ROUND_STEPS
        return point("settling", left=SETTLE_STEPS - track.since_compile, eta_s=_eta(left, step, ROUND_S))
    wait = epoch_wait(track, budget_s) if first_round else None
    if wait is not None:
        return point("epoch", at=wait, eta_s=_eta(wait - track.last_i + SETTLE_STEPS, step, 0.0))
    left = max(0, ROUND_STEPS - track.settled)
    left_s = max(0.0, ROUND_S - track.settled_s)
    if left or left_s:
        return point("steps", left=left, left_s=round(left_s, 1), eta_s=_eta(left, step, left_s))
    return point("ready", eta_s=0.0)


def epoch_wait(track: ProcessTrack, budget_s: float | None) -> int | None:
    """The step round 1 waits for: its first epoch's end and a settle after it (where a script's
    validation pass usually runs), when its DataLoader says how long an epoch is, no pass was seen
    yet, and the epoch ends within EPOCH_SHARE of the budget at its recent step; else None."""
    if track.epoch is None or track.gaps:
        return None
    at = track.epoch + SETTLE_STEPS
    if track.last_i >= at:
        return None
    step = track.step_s
    if budget_s is not None and step is not None and at * step > EPOCH_SHARE * budget_s:
        return None
    return at


def _eta(steps: int, step_s: float | None, floor_s: float) -> float | None:
    return None if step_s is None else max(steps * step_s, floor_s)


def round_state(states: list[Point]) -> Point:
    """A round's processes together: the first of them not ready (by what it waits for, the
    least advanced first), or ``ready``; ``eta_s``: the stepping its processes still need, added
    (they take turns)."""
    order = ("building", "compiling", "settling", "epoch", "steps", "ready")
    waiting = [s for s in states if s.code != "ready"]
    if not waiting:
        return point("ready", eta_s=0.0)
    first = min(waiting, key=lambda s: order.index(s.code))
    etas = [s.get("eta_s") for s in waiting]
    eta = None if None in etas else sum(etas)
    return point(first.code, **{**first.figures, "eta_s": eta, "waiting": len(waiting)})


# ---- the look after a round ---------------------------------------------------------------------
def decided(lo: float | None, hi: float | None, margin: float) -> str | None:
    """What a candidate's interval says for good: ``faster``, ``slower``, ``same`` (within
    ±margin), or None (not yet)."""
    if lo is None or hi is None:
        return None
    if lo > 1.0:
        return "faster"
    if hi < 1.0:
        return "slower"
    if lo >= 1.0 / (1.0 + margin) and hi <= 1.0 + margin:
        return "same"
    return None


def look(summary, design: Design) -> Point:
    """Whether the session's rounds answer it: an answer code (ANSWERS: ``faster`` when a
    candidate is, ``same`` when all are, else ``slower``; ``no_answer``: more rounds cannot
    bring one; ``unreliable``: the verdict's doubts stood after MIN_ROUNDS) or what is missing:
    ``rounds`` (fewer than MIN_ROUNDS paired), ``interval`` (a candidate's interval undecided:
    ``label``, ``speedup``, ``lo``, ``hi``, ``rounds_left``, the rounds its interval would need
    at today's estimate and spread; None: not within the design's rounds). Figures: ``rounds``
    paired."""
    noise = summary.noise
    rounds = noise.rounds if noise is not None else 0
    verdict = summary.verdict
    if verdict is not None and verdict.code in HOPELESS:
        return point("no_answer", rounds=rounds, verdict=verdict.code)
    candidates = list(verdict.candidates) if verdict is not None else []
    if rounds < design.min_rounds or not candidates:
        return point("rounds", rounds=rounds, need=design.min_rounds)
    if verdict.code == "unreliable":  # its doubts (steady-state recompiles, every round busy) repeat
        return point("unreliable", rounds=rounds)
    found = [(c, decided(c["lo"], c["hi"], design.margin)) for c in candidates]
    open_ = [c for c, d in found if d is None]
    if open_:
        worst = max(open_, key=lambda c: _needs(c, noise, design, rounds) or math.inf)
        return point("interval", rounds=rounds, label=worst["label"], speedup=worst["speedup"],
                     lo=worst["lo"], hi=worst["hi"], rounds_left=_needs(worst, noise, design, rounds))
    said = {d for _, d in found}
    code = "faster" if "faster" in said else "same" if said == {"same"} else "slower"
    best = max(candidates, key=lambda c: c["speedup"])
    return point(code, rounds=rounds, label=best["label"], speedup=best["speedup"], lo=best["lo"],
                 hi=best["hi"])


def _needs(c: dict, noise, design: Design, rounds: int) -> int | None:
    """Rounds more that a candidate's interval needs to be decided, if its estimate and the
    spread stay as they are: its half-width shrinks as crit(k) / sqrt(k)."""
    if c["lo"] is None or not noise.round_df:
        return None
    half = math.log(c["hi"] / c["lo"]) / 2.0
    centre = math.log(c["speedup"])
    now = noise.round_crit
    per_df = noise.round_df / max(1, rounds - 1)  # (V - 1) degrees of freedom a round
    for k in range(rounds + 1, design.max_rounds + 1):
        crit = design.crit(k, per_df * (k - 1))
        h = half * crit / now * math.sqrt(rounds / k)
        if abs(centre) > h or abs(centre) + h <= math.log1p(design.margin):
            return k - rounds
    return None


# ---- the record the views show -------------------------------------------------------------------
@dataclass(frozen=True)
class Known:
    """How far a session's answer is, or why it stopped: ``code`` (an answer of ANSWERS, or what
    is missing: building, compiling, settling, epoch, steps, rounds, interval), ``round`` (the one
    under way), ``rounds`` (paired so far: a round beside other load is left out), ``eta_s`` (the
    estimated seconds to an answer: the round's own stepping left, then whole rounds' wall time;
    None: cannot tell yet), ``stopped`` (the session is over: ``known``,
    ``budget``, ``max_rounds``, ``user``), and the figures of ``about`` (the variant or process it
    waits for, or the deciding candidate)."""

    code: str
    round: int | None = None
    rounds: int = 0
    margin: float = 0.03
    max_rounds: int = 0
    budget_s: float | None = None
    stepped_s: float | None = None  # stepping counted against the budget so far
    eta_s: float | None = None
    rounds_left: int | None = None
    about: str | None = None
    speedup: float | None = None
    lo: float | None = None
    hi: float | None = None
    left: int | None = None  # steps a process still needs (settling, steps)
    left_s: float | None = None  # ... and seconds of steady steps (steps)
    stopped: str | None = None

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: dict) -> Known:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def progress(last: Point, now: Point, design: Design, round_: int, round_s: float | None,
             about: str | None = None) -> Known:
    """The live record: ``last`` (the latest look's point), ``now`` (the round under way, by
    round_state), ``round_s`` (a whole warm round's wall time, its starts and compiles in it;
    None: none yet). The round's own wait comes first while it has one; after it, the looks'."""
    rounds = last.get("rounds", 0)
    base = {"round": round_, "rounds": rounds, "margin": design.margin, "max_rounds": design.max_rounds}
    if last.code in ANSWERS:
        return Known(last.code, **base, about=last.get("label"), speedup=last.get("speedup"),
                     lo=last.get("lo"), hi=last.get("hi"))
    # Rounds after this one, before an answer: to MIN_ROUNDS, else the interval's projection.
    after = max(0, design.min_rounds - round_) if last.code == "rounds" else last.get("rounds_left")
    if last.code == "interval" and after is not None:
        after = max(0, after - (round_ - rounds))  # the round under way is one of them
    this = now.get("eta_s")
    if this is None and now.code in ("building", "compiling") and round_s is not None:
        this = round_s  # a round just begun (its starts and compiles in it): the last whole one's
    unknown = this is None or after is None or (after and round_s is None)
    eta = None if unknown else this + after * (round_s or 0.0)
    if now.code != "ready":
        return Known(now.code, **base, eta_s=eta, rounds_left=after, about=about, left=now.get("left"),
                     left_s=now.get("left_s"))
    return Known(last.code, **base, eta_s=eta, rounds_left=after, about=last.get("label"),
                 speedup=last.get("speedup"), lo=last.get("lo"), hi=last.get("hi"))


def ended(known: Known | None, summary_look: Point, session_status: str | None) -> Known | None:
    """The record a finished session keeps: the supervisor's last word (``known`` with
    ``stopped``), else what ended it without one — ``user`` (Ctrl-C, the runs stopped by hand) or
    ``failed`` (a run's build failed: nothing ran on) — with what its rounds say now."""
    if known is not None and known.stopped:
        return known
    if session_status is None:
        return known
    base = known or Known(summary_look.code)
    return replace(base, code=summary_look.code, rounds=summary_look.get("rounds", base.rounds),
                   stopped="failed" if session_status == "failed" else "user", eta_s=None,
                   about=summary_look.get("label"), speedup=summary_look.get("speedup"),
                   lo=summary_look.get("lo"), hi=summary_look.get("hi"))
