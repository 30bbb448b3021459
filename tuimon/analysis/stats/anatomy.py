"""How tuimon read a script's loop (the runner's ``anatomy`` event), as a row's record, and that
reading checked against the run itself: the losses and step times the script printed against
tuimon's at the same steps, the lead optimizer's ``step()`` calls against the steps. Each check
is a point (report/anatomy_text.py words it); the verdict says "cannot tell" where a
disagreement touches the figures it weighs."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace

from tuimon.analysis.stats.point import Point, point

AGREE = 1e-3  # relative: a printed loss agrees with tuimon's (4 to 6 printed digits)
NEAR = 0.02  # ... is within 2 % of it at every step: the same quantity, another sample of it
TIME_AGREE = 0.10  # a printed step time within 10 % of tuimon's at the same step
# Time in no step, no turn's wait, not the start-up or the end, from which the steps do not hold
# the loop's work: 10 % of the process's life and 5 s (a bookkeeping residue is ~1 s: the
# compiled variants of eleven public scripts read 0.1 to 2.1 s, issue 40's rerun)
OUTSIDE, OUTSIDE_S = 0.10, 5.0
ENOUGH = 3  # pairs of a series needed to say anything


@dataclass(frozen=True)
class Anatomy:
    """The reading (the last anatomy event: the whole run's counts) and its checks. ``ends_at``
    None: nothing was said (a recipe, whose loop is tuimon's, or an older session)."""
    ends_at: str | None = None  # optimizer.step | backward
    inside: bool = False  # backward-ended steps all inside one optimizer step() (LBFGS's closure)
    steps: int = 0
    # {optimizer, params, steps, module, compiled, beside, lead, every, span [first, last],
    #  per_step {step() calls: the lead's steps}}
    optimizers: tuple[dict, ...] = ()
    backwards: dict[str, int] = field(default_factory=dict)  # backward() calls a step -> steps
    loss_sums: dict[str, int] = field(default_factory=dict)  # losses a step's loss sums -> steps
    outside: dict[str, dict] = field(default_factory=dict)  # kind -> {steps, count, gaps}
    trainings: tuple[dict, ...] = ()  # {step, optimizer}: the lead from that step on
    lead_changes: int = 0
    printed: dict = field(default_factory=dict)  # what the script printed: {losses, ms}
    # the run's clock: finished's t, seconds, paused_s, profile_s; run_exited's exited_t, life_s
    clock: dict = field(default_factory=dict)
    checks: tuple[Point, ...] = ()

    @property
    def lead(self) -> dict | None:
        return next((o for o in self.optimizers if o.get("lead")), None)

    @property
    def cycle(self) -> int:
        """The lead's steps in one cycle of the others' (a critic's 5 a generator step): 1 none."""
        whole = [int(o["cadence"]) for o in self.optimizers
                 if not o.get("lead") and o.get("steps") and float(o.get("cadence", 1)).is_integer()]
        return max(whole, default=1)

    @property
    def loss_sum(self) -> int:
        """The backward() losses a step's loss is the sum of, in most steps."""
        return int(_mode(self.loss_sums) or 1)


def anatomy_of(e: dict, before: Anatomy) -> Anatomy:
    """The record after an ``anatomy`` event (the latest holds the run's counts so far)."""
    return replace(before, ends_at=e.get("ends_at"), inside=bool(e.get("inside")),
                   steps=int(e.get("steps") or 0),
                   optimizers=tuple(_optimizer(o, int(e.get("steps") or 0))
                                    for o in e.get("optimizers") or ()),
                   backwards=dict(e.get("backwards") or {}), loss_sums=dict(e.get("loss_sums") or {}),
                   outside=dict(e.get("outside") or {}), trainings=tuple(e.get("trainings") or ()),
                   lead_changes=int(e.get("lead_changes") or 0))


def _optimizer(o: dict, steps: int) -> dict:
    """An optimizer's row with its cadence, its step() calls in a step it stepped in (the most
    common count: a SAC's actor 2), and ``within``: the lead's steps it stepped over, when they
    are a part of the run (a model trained after another), else None."""
    calls = {int(k): n for k, n in (o.get("per_step") or {}).items() if int(k)}
    span = o.get("span")
    within = span if span and (span[0] > 2 or span[1] < steps - 3) else None
    return {**o, "cadence": cadence(o.get("every")), "once": sum(calls.values()) == 1,
            "times": max(calls, key=lambda k: calls[k]) if calls else 1, "within": within}


def cadence(every: float | None) -> float:
    """How often an optimizer stepped, in the lead's steps: 1 (every step), a whole number when
    near one (a run cut at the lead's step leaves the others one short: 29 of 30 is every step,
    80 of 401 every 5th), else to a tenth."""
    if not every or every < 1.5:
        return 1
    near = round(every)
    return near if abs(every - near) <= 0.15 * every else round(every, 1)


def checked(a: Anatomy, losses: dict[int, float], ms: dict[int, float],
            span: tuple[float, float] | None = None) -> Anatomy:
    """The reading set against the run: the script's printed losses and step times against
    tuimon's at the same steps (``losses``, ``ms``: step -> value), the lead's step() calls
    against the steps it ended, and the process's time against what the steps account for
    (``span``: the first step's start and the last one's end, epoch seconds)."""
    if a.ends_at is None:
        return a
    out = [_time(a, sum(ms.values()) / 1000.0, span)]
    named = a.printed.get("losses_by") or (
        {"": a.printed["losses"]} if a.printed.get("losses") else {})
    if named:
        out.append(_named_losses(named, losses, a.loss_sum))
    if printed := a.printed.get("ms"):
        out.append(_times(printed, ms))
    lead = a.lead
    if lead is not None and a.ends_at == "optimizer.step" and not a.lead_changes > 1 \
            and lead.get("steps") not in (None, a.steps):
        out.append(point("steps_differ", steps=a.steps, lead_steps=lead["steps"],
                         optimizer=lead.get("optimizer")))
    return replace(a, checks=tuple(p for p in out if p is not None))


def doubts(a: Anatomy) -> list[Point]:
    """Why a row's step times cannot stand for its training, from its reading: a step that was
    not one step() of its lead (``steps_differ``), and several trainings of different models
    one after another pooled into one steady state (``trainings``: a distillation script's
    teacher then students; one model's new optimizer each epoch is one training)."""
    out = [p for p in a.checks if p.code in ("steps_differ", "time_outside")]
    modules = {a.optimizers[t["optimizer"]].get("module") for t in a.trainings
               if t.get("optimizer") is not None and t["optimizer"] < len(a.optimizers)}
    if a.lead_changes > 1 and len(modules) > 1:
        out.append(point("trainings", count=a.lead_changes, modules=sorted(m or "?" for m in modules)))
    return out


def training_starts(a: Anatomy) -> list[int]:
    """The steps at which a new training began (after the first): its first compiles are its
    warm-up, no recompile."""
    return [int(t["step"]) for t in a.trainings[1:]]


RANK = {"losses_agree": 0, "losses_near": 1, "losses_scaled": 2, "losses_differ": 3}


def _named_losses(named: dict[str, list], ours: dict[int, float], summed: int) -> Point | None:
    """The printed series that best matches tuimon's loss (a GAN prints its D and G losses on
    one line: the step's is one of them), named; a difference only when none matches."""
    found = [(p, name) for name, series in named.items()
             if (p := _losses(series, ours, summed)) is not None]
    if not found:
        return None
    p, name = min(found, key=lambda pn: (RANK[pn[0].code], -pn[0].figures["pairs"]))  # the longest
    if p.code == "losses_differ" and len(found) > 1:
        return point("losses_differ", **p.figures, names=sorted(n for _, n in found))
    return point(p.code, **p.figures, name=name) if name else p


def _losses(printed: list, ours: dict[int, float], summed: int) -> Point | None:
    best = None
    for offset in (0, -1, 1):
        pairs = [(float(v), ours[k + offset]) for k, v in printed if ours.get(k + offset) is not None]
        agree = sum(_close(p, o) for p, o in pairs)
        if len(pairs) >= ENOUGH and (best is None or agree > best[0]):
            best = (agree, offset, pairs)
    if best is None:
        return None
    agree, offset, pairs = best
    if agree >= 0.8 * len(pairs):
        return point("losses_agree", pairs=len(pairs), offset=offset)
    ratios = [p / o for p, o in pairs if o]
    ratio = statistics.median(ratios) if ratios else None
    if ratio is not None and abs(ratio - 1) <= NEAR and all(_close(r, 1.0, NEAR) for r in ratios):
        # the same quantity, not the same number (llama2.c prints its last micro-batch's loss, 4×)
        return point("losses_near", pairs=len(pairs), within=NEAR)
    if ratio is not None and all(_close(r, ratio, 0.01) for r in ratios):
        # mean: the script prints the mean of the ``summed`` losses tuimon adds up
        return point("losses_scaled", pairs=len(pairs), ratio=round(ratio, 6), summed=summed,
                     mean=summed > 1 and _close(ratio * summed, 1.0, 0.01))
    return point("losses_differ", pairs=len(pairs), agree=agree)


def _times(printed: list, ours: dict[int, float]) -> Point | None:
    best = None
    for offset in (0, -1, 1):
        pairs = [(float(v), ours[k + offset]) for k, v in printed
                 if ours.get(k + offset) and float(v) > 0]
        if len(pairs) >= ENOUGH and (best is None or len(pairs) > len(best[1])):
            best = (offset, pairs)
    if best is None:
        return None
    ratio = statistics.median(p / o for p, o in best[1])
    code = "times_agree" if abs(ratio - 1) <= TIME_AGREE else "times_differ"
    return point(code, pairs=len(best[1]), ratio=round(ratio, 3))


def _time(a: Anatomy, steps_s: float, span: tuple[float, float] | None) -> Point | None:
    """The process's life as the steps account for it: its start-up before the first step, the
    steps, the turns it waited for (and profiler captures), its end after the last step, and
    what is in none of them. Work the steps do not hold (a loop whose steps tuimon misread, a
    training between them) shows there; ``time_outside`` when it is over OUTSIDE of its life."""
    c = a.clock
    if span is None or c.get("life_s") is None or c.get("exited_t") is None or c.get("seconds") is None:
        return None
    life = float(c["life_s"])
    born = float(c["exited_t"]) - life
    startup = max(0.0, span[0] - born)
    after = max(0.0, float(c["exited_t"]) - span[1])
    waits = float(c.get("paused_s") or 0.0) + float(c.get("profile_s") or 0.0)
    outside = life - startup - steps_s - waits - after
    figures = {"life_s": round(life, 2), "startup_s": round(startup, 2), "steps_s": round(steps_s, 2),
               "waits_s": round(waits, 2), "after_s": round(after, 2),
               "outside_s": round(max(outside, 0.0), 2)}
    code = "time_outside" if outside > max(OUTSIDE_S, OUTSIDE * life) else "time_accounted"
    return point(code, **figures)


def _close(a: float, b: float, rel: float = AGREE) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-6


def _mode(counts: dict[str, int]) -> str | None:
    return max(counts, key=lambda k: counts[k]) if counts else None
