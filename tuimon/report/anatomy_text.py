"""How tuimon read a script's loop, in words: the document's "loop" section (summary.md, the
page, the terminal, the TUI's why pane) and its one line (the TUI's strip). From the rows'
anatomy records (analysis/stats/anatomy.py): the step and what it holds, the other optimizers
and their cadence, the loss a step keeps, each module and how each variant ran it, the work
outside training, the trainings one after another, and what checking it against the script's
own numbers found."""

from __future__ import annotations

from tuimon.analysis import RunStats, SessionSummary, columns
from tuimon.fmt import fmt_s
from tuimon.report.document import FACT, NOTE, WARNING, Line, Section

# How a variant ran a module (runner/script/trained.py's codes).
HOW = {
    "tuimon": "compiled by tuimon (the script compiles none)",
    "script": "compiled by the script's own torch.compile",
    "script-blocks": "compiled per block by the script: {blocks}",
    "tuimon-blocks": "compiled per block by tuimon (the script compiles none; fully_shard made "
                     "each block an FSDP unit): {blocks}",
    "variant": "eager (the eager variant)",
    "script-other": "eager: the script compiles other modules, tuimon none",
    "named-other": "eager: not --compile-module's",
    "no-auto": "eager: --no-auto-compile",
    "not-found": "not found: no module called in the first step holds its parameters",
    "late": "not looked for: its optimizer was made after the first step (a later lead's is)",
    "double-backward": "left eager: a double backward (torch.autograd.grad with create_graph, a "
                       "gradient penalty) reaches it, which torch.compile cannot differentiate",
    "inside": "compiled inside {beside}",
    "holds": "left eager: it holds {beside}, compiled already",
}
# What a step held besides training (runner/script/validation.py's kinds, joined by "+").
HELD = {"eval": "model.eval()", "loader": "another DataLoader's batches",
        "no_grad": "calls of the trained module with gradients off (sampling, generation, a rollout)"}
DISAGREE = {"losses_differ", "losses_scaled", "times_differ", "steps_differ",  # said as warnings
            "time_outside"}
LOSS_WORDS = {True: "the sum of the {n} backward() losses before each step() (a script that "
                    "scales each micro-batch's loss by 1/{n} prints this sum)",
              False: "the backward() loss before each step()"}


def read(summary: SessionSummary) -> list[RunStats]:
    """The rows whose loop was read (a script's)."""
    return [r for r in columns(summary) if r.anatomy.ends_at is not None]


def section(summary: SessionSummary) -> Section:
    rows = read(summary)
    if not rows:
        return Section("loop")
    a = rows[0].anatomy  # the reading: the same loop in every variant; how each ran it differs
    # part: what a line says (the strip shows the step and the loss, the why pane all of them)
    lines = [Line(FACT, step_text(a), {"part": "step"}),
             *(Line(FACT, t, {"part": "other"}) for t in others_text(a)),
             Line(FACT, loss_text(a), {"part": "loss"})]
    lines += [Line(FACT, f"{r.label}: {modules_text(r)}", {"label": r.label, "part": "modules"})
              for r in rows]
    lines += [Line(FACT, t, {"part": "outside"}) for t in outside_text(rows)]
    if a.lead_changes > 1:
        lines.append(Line(FACT, trainings_text(a), {"part": "trainings"}))
    for r in rows:
        # a note is said with its row's label by every surface; a warning names it itself
        lines += [Line(WARNING, f"{r.label}: {check_text(p)}", {"label": r.label, "code": p.code})
                  if p.code in DISAGREE else Line(NOTE, check_text(p), {"label": r.label, "code": p.code})
                  for p in r.anatomy.checks]
    return Section("loop", "How tuimon read the loop", tuple(lines))


def step_text(a) -> str:
    lead = a.lead
    counts = _counts(a.backwards, "backward()")
    if a.ends_at != "optimizer.step" or lead is None:
        holder = _holder(a)
        if holder is not None:  # LBFGS: the closure's backward()s all run inside its one step()
            return (f"step: from one backward() to the next, inside `{holder['optimizer']}.step()` "
                    f"({_module(holder)}), whose closure trains there — {a.steps} steps; {counts}")
        return (f"step: from one backward() to the next (no torch.optim optimizer step ends it) — "
                f"{a.steps} steps; {counts}")
    return (f"step: one `{lead['optimizer']}.step()` ({_module(lead)}) — {a.steps} steps; {counts}")


def _holder(a) -> dict | None:
    """The optimizer whose step() holds backward-ended steps (its closure's), if they are so."""
    return next((o for o in a.optimizers if not o.get("steps") or o["steps"] <= 1), None) \
        if a.inside else None


def others_text(a) -> list[str]:
    out, holder = [], _holder(a)
    for o in a.optimizers:
        if o.get("lead") or o is holder:
            continue
        out.append(f"another optimizer: `{o['optimizer']}.step()` ({_module(o)}) {cadence_text(o)} "
                   f"({o.get('steps', 0)} steps)")
    return out


def cadence_text(o: dict) -> str:
    """'every step', '2× every 2 steps', 'every step in steps 40–79': how often an optimizer
    stepped, over the lead's steps from its first to its last (a training's span)."""
    if not o.get("steps"):
        return "never stepped"
    every, times, within = o.get("cadence", 1), o.get("times", 1), o.get("within")
    if o.get("once"):
        return f"in one step ({within[0]})" if within else "in one step"
    text = (f"{times}× " if times > 1 else "") + ("every step" if every == 1 else f"every {every:g} steps")
    return text + (f" in steps {within[0]}–{within[1]}" if within else "")


def loss_text(a) -> str:
    n = a.loss_sum
    return "loss: " + LOSS_WORDS[n > 1].format(n=n)


def modules_text(r: RunStats) -> str:
    parts = []
    failed = r.compile.nothing_compiled is not None and r.compile.nothing_compiled.code == "failed"
    for o in r.anatomy.optimizers:
        how = HOW.get(o.get("compiled") or "", o.get("compiled") or "not said")
        if failed and o.get("compiled") in ("tuimon", "script", "tuimon-blocks", "script-blocks"):
            how += ", but the compile failed: it ran eager"  # asked, never run compiled
        blocks = blocks_text(o.get("blocks"))
        if o.get("compiled") == "variant" and blocks:  # the script's own, turned off here
            how += f"; the script's per-block compiles ({blocks}) turned off"
        parts.append(f"{o.get('module') or 'its module'} {how.format(beside=o.get('beside'), blocks=blocks)}")
    return "; ".join(parts) or "no optimizer: nothing to compile by"


def blocks_text(blocks: dict | None) -> str | None:
    """'8 × TransformerBlock': the blocks a module was compiled by, one compile each."""
    return f"{blocks['count']} × {blocks['class']}" if blocks else None


def outside_text(rows: list[RunStats]) -> list[str]:
    """The work outside training each kind of step held, with its compiles (a compiled row's)."""
    a = rows[0].anatomy
    out = []
    for kind, seen in a.outside.items():
        what = " and ".join(HELD.get(k, k) for k in kind.split("+"))
        steps = ", ".join(str(i) for i in seen.get("steps", []))
        left = seen["count"] - len(seen.get("steps", []))
        more = f" and {left} more" if left > 0 else ""
        kept = ("kept apart" if seen.get("gaps") == seen["count"] else
                f"{seen.get('gaps', 0)} kept apart, the rest part of their steps")
        out.append(f"outside training: {what} at step{'s' if seen['count'] > 1 else ''} {steps}{more} "
                   f"({seen['count']} step{'s' if seen['count'] > 1 else ''}, {kept})")
    for r in rows:
        c = r.compile
        if c.val_compiles:
            out.append(f"{r.label}: {c.val_compiles} compiles outside training "
                       f"({fmt_s(c.val_compile_s or 0)}), kept apart from training's")
    return out


def trainings_text(a) -> str:
    names = {k: o for k, o in enumerate(a.optimizers)}
    said = ", ".join(f"step {t['step']}: {_module(names.get(t['optimizer'], {}))}" for t in a.trainings)
    return (f"trainings: {a.lead_changes} one after another (the lead optimizer changed): {said}; "
            "each new model's first compiles are its own warm-up")


def check_text(p) -> str:
    """One check of the reading against the run: the script's prints, the steps, its time."""
    f = p.figures
    which = f"printed {f['name'].upper() if len(f['name']) <= 2 else f['name']} loss" if f.get(
        "name") else "printed loss"
    if p.code == "losses_agree":
        return f"its {which}es agree with tuimon's at {f['pairs']} steps"
    if p.code == "losses_near":
        return (f"its {which}es are within {f['within']:.0%} of tuimon's at {f['pairs']} steps (the "
                "same loss, not the same number: a micro-batch's, or rounded)")
    if p.code == "losses_scaled":
        why = (f": it prints the mean of the {f['summed']} backward() losses tuimon sums"
               if f.get("mean") else "")
        return f"its {which} is {f['ratio']:g}× tuimon's at {f['pairs']} steps{why}"
    if p.code == "losses_differ":
        names = f" (its {', '.join(n or 'loss' for n in f['names'])} losses alike)" if f.get("names") else ""
        return (f"its printed losses differ from tuimon's at {f['pairs'] - f['agree']} of {f['pairs']} "
                f"steps{names}: tuimon's loss is not the one it prints")
    if p.code == "times_agree":
        return f"its printed step times agree with tuimon's ({f['ratio']:g}× at {f['pairs']} steps)"
    if p.code == "times_differ":
        return (f"its printed step times are {f['ratio']:g}× tuimon's at {f['pairs']} steps: its "
                "timer and tuimon's do not time the same work")
    if p.code in ("time_accounted", "time_outside"):
        parts = (f"start-up {fmt_s(f['startup_s'])}, steps {fmt_s(f['steps_s'])}, waits for other "
                 f"variants' turns {fmt_s(f['waits_s'])}, after its last step {fmt_s(f['after_s'])}")
        if p.code == "time_outside":
            return (f"{fmt_s(f['outside_s'])} of its process's {fmt_s(f['life_s'])} ran in none of its "
                    f"steps ({parts}): the steps do not hold all of its loop's work")
        return f"its process's {fmt_s(f['life_s'])}: {parts}; {fmt_s(f['outside_s'])} in none"
    if p.code == "steps_differ":
        return (f"{f['lead_steps']} `{f['optimizer']}.step()` calls for {f['steps']} steps: a step "
                "was not one optimizer step")
    return p.code


def _module(o: dict) -> str:
    params = o.get("params")
    size = f", {params:,} parameters" if params else ""
    return f"{o.get('module') or 'its module not found'}{size}"


def _counts(counts: dict, what: str) -> str:
    if not counts:
        return f"no {what}"
    if len(counts) == 1:
        (n, _), = counts.items()
        return f"{n} {what} each"
    return ", ".join(f"{n} {what} in {k} step{'s' if k != 1 else ''}" for n, k in counts.items())


def _mode(counts: dict) -> str:
    return max(counts, key=lambda k: counts[k]) if counts else "no"
