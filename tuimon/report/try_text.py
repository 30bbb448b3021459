"""``tuimon try`` in words: what will be raced and why (``plan_lines``), what each fix did
(``outcome_line``, analysis/tried.py's decisions), and the lines that keep a winner
(``keep_lines``). The document's "Tried" section (``section``) and the command's answer both come
from here."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from tuimon import fixes
from tuimon.analysis import SessionSummary, tried
from tuimon.fmt import fmt_bytes, fmt_ms, fmt_ratio, fmt_span
from tuimon.report.document import CODE, KEEP, TRIED, Line, Section
from tuimon.report.price_text import price_text
from tuimon.report.trust_text import load_words
from tuimon.report.untold_text import untold_text, untold_why

VERDICT = {
    tried.HELPED: "faster",
    tried.START: "a shorter compile, the step no better beyond noise",
    tried.NO_BETTER: "no better beyond noise",
    tried.WORSE: "slower",
    tried.FAILED: "failed",
    tried.NOT_APPLIED: "could not be applied",
    tried.CANNOT_TELL: "cannot tell",  # then why (unsure_text)
    tried.PENDING: "under way",
}
# Why a suggested fix is passed over (fixes.cannot's own words, and these).
PASSED = {tried.ALREADY: "this variant has it already", tried.NO_BLOCK: "no repeated block"}


def block_words(repeated: dict | None) -> str:
    """regional's target: '8 blocks of Block', or, not known yet, 'if it has a repeated block'."""
    if repeated is None:
        return "if it has a repeated block"
    if tried.blockless(tried.REGIONAL, repeated):
        return f"no repeated block in {repeated.get('model')}"
    return f"{repeated['count']} blocks of {repeated.get('block')}"

# The lines that make a fix permanent, in the user's own code (docs/try.md says more).
KEEP_CODE = {
    "regional": ["for block in model.<blocks>:  # each repeated block, instead of torch.compile(model)",
                 "    block.compile()"],
    "dynamic": ["torch.fx.experimental._config.use_duck_shape = False  # equal sizes, own symbols",
                "model = torch.compile(model, dynamic=True)"],
    "scalars": ["torch._dynamo.config.capture_scalar_outputs = True",
                "torch._dynamo.config.capture_dynamic_output_shape_ops = True"],
    "opt": ["@torch.compile(fullgraph=False)",
            "def opt_step():", "    optimizer.step()", "# ... and call opt_step() for optimizer.step()"],
    "foreach": ["optimizer = torch.optim.AdamW(params, lr=..., foreach=True)  # fused=True on CUDA"],
    "loader": ["DataLoader(dataset, ..., num_workers=<cores>, persistent_workers=True, "
               "pin_memory=True)  # pin_memory on CUDA"],
    "amp": ["with torch.autocast(device_type, dtype=torch.bfloat16):",
            "    loss = loss_fn(model(inputs), targets)"],
    "tf32": ["torch.backends.cuda.matmul.allow_tf32 = True", "torch.backends.cudnn.allow_tf32 = True"],
    "no-cudagraphs": ['model = torch.compile(model, mode="max-autotune-no-cudagraphs")'],
    "reduce-overhead": ['model = torch.compile(model, mode="reduce-overhead")'],
    "max-autotune": ['model = torch.compile(model, mode="max-autotune")'],
    "channels-last": ["model = model.to(memory_format=torch.channels_last)",
                      "inputs = inputs.to(memory_format=torch.channels_last)"],
}


def plan_lines(plan: tried.TryPlan, session: Path) -> list[str]:
    base = plan.base
    said = (f" ({fmt_ratio(base.compare.speedup)} against eager)"
            if base.compiled and base.compare.speedup else "")
    if said and base.compare.untold is not None:  # no figure: its interval holds every answer
        said = f" (against eager: {untold_text(base.compare.untold)})"
    lines = [f"try: {session.name}: fixes on {base.label}{said}"]
    for c in plan.candidates:
        if c.cannot is not None:
            continue
        price = f", {price_text(c.price)}" if price_text(c.price) else ""
        whose = f" in {c.seen_in}" if c.seen_in else ""
        why = (f" (answers {', '.join(c.answers)}{whose}{price})" if c.answers
               else " (asked for with --only)")
        where = f" — {block_words(c.repeated)}" if c.fix == tried.REGIONAL else ""
        lines.append(f"  {c.fix}: {fixes.FIXES[c.fix].title}{why}{where}")
    cannot = [f"{c.fix} ({block_words(c.repeated) if c.cannot == tried.NO_BLOCK else c.cannot})"
              for c in plan.candidates if c.cannot is not None]
    if cannot:
        lines.append(f"  cannot try here: {', '.join(cannot)}")
    if not plan.raced:
        lines.append(f"try: nothing to race: {base.label}'s findings call for no fix this machine "
                     "can try" if not cannot else "try: nothing to race here")
    return lines


def budget_line(length: dict, base) -> str:
    """What --budget gives each run of the try session (cli/try_fixes.py budget_for), and what
    its estimates stand on: the tried session's own compiles, and its base's median step."""
    steps = (f"; ~{length['steps']:,} steps a run at {base.label}'s median step of "
             f"{fmt_ms(base.timing.median_ms)} in the tried session" if length.get("steps") else "")
    return f"try: --budget {fmt_span(length['seconds'])}: {length['text']}{steps}"


def outcome_line(o: tried.Outcome) -> str:
    """'regional: cold compile 62 s → 14 s, step 1.00× (95 % CI ...), pays off after 40 s
    instead of 6.0 min — a shorter compile, the step no better beyond noise'."""
    name = o.fix.replace(fixes.JOIN, " + ")
    if o.code == tried.FAILED:
        return f"{name}: failed: {o.error or 'see its log'}"
    if o.code == tried.NOT_APPLIED:
        return f"{name}: could not be applied: {o.not_applied}"
    if o.code == tried.PENDING:
        return f"{name}: under way, no step compared with the variant without it yet"
    parts = []
    if o.compile_s is not None and o.base_compile_s is not None:
        start = f"{o.start} " if o.start in ("cold", "warm") else ""
        parts.append(f"{start}compile {fmt_span(o.base_compile_s)} → {fmt_span(o.compile_s)}")
    if o.untold is not None:  # no figure: its interval holds every answer; why once, here or below
        wide = any(r.code == tried.WIDE for r in o.unsure)
        parts.append("step cannot tell" if wide else f"step {untold_text(o.untold)}")
    elif o.speedup is not None:
        parts.append(f"step {fmt_ratio(o.speedup, o.speedup_lo, o.speedup_hi)}")
    payoff = pays(o)
    if payoff:
        parts.append(payoff)
    if o.peak_bytes and o.base_peak_bytes:
        parts.append(f"peak memory {fmt_bytes(o.base_peak_bytes)} → {fmt_bytes(o.peak_bytes)}")
    removed = [f"{what} {a} → {b}" for what, (a, b) in (("recompiles", o.recompiles),
                                                         ("graph breaks", o.breaks)) if a != b]
    parts += removed
    verdict = VERDICT[o.code]
    if o.code == tried.CANNOT_TELL and o.unsure:
        verdict += f": {unsure_text(o.unsure)}"
    return f"{name}: {', '.join(parts) or 'no figures'} — {verdict}"


def unsure_text(reasons) -> str:
    """Why a fix's step cannot be told (analysis/tried.py unsure), short: the rows' notes in
    summary.md say the doubts at length."""
    return "; ".join(dict.fromkeys(reason_words(r) for r in reasons))


def reason_words(r) -> str:
    if r.code == tried.LOAD and r.get("busy") is not None:
        return (f"the machine was busy (other processes used {load_words(r.get('busy').get('load'))}"
                " while the steps ran)")
    if r.code == tried.LOAD:
        return f"other processes' load differed between {r.get('label')} and its baseline"
    if r.code == tried.DOUBTS:
        return f"{r.get('label')}: " + ", ".join(DOUBT.get(d.code, d.code) for d in r.get("doubts"))
    if r.code == tried.WIDE:
        return untold_why(r, "the step's")
    if r.code == tried.ONE:
        return ("one process a variant: the spread between processes is assumed "
                f"(±{r.get('assumed_pct')} %), and this session tells a speedup of "
                f"±{r.get('tells_pct')} % or more (--repeats 3 measures it)")
    if r.get("steps") is not None:
        return f"too few steady steps to compare ({r.get('steps')} of {r.get('need')})"
    return "too few steady steps for an interval"


# A row's doubts in a few words (report/trust_text.py doubt_text says them at length).
DOUBT = {"recompiled": "recompiles after warm-up", "faults_differ": "page faults differed from eager's"}


def pays(o: tried.Outcome) -> str | None:
    if o.breakeven_never:
        return "never pays off against eager"
    if o.breakeven_s is None:
        return None
    text = f"pays off after {fmt_span(o.breakeven_s)}"
    if o.base_breakeven_s is not None:
        text += f" instead of {fmt_span(o.base_breakeven_s)}"
    elif o.base_breakeven_never:
        text += " (without it: never)"
    return text


def loss_line(o: tried.Outcome) -> str | None:
    base, fix = o.loss_diff
    if fix is None:
        return None
    return (f"    losses: max |Δ| {fix:.3g} against eager (the variant without it: "
            f"{'—' if base is None else f'{base:.3g}'})")


def keep_lines(fix_value: str) -> list[str]:
    out = []
    for name in fixes.parse(fix_value):
        out += [f"    {line}" for line in KEEP_CODE.get(name, [])]
    return out


def answer_lines(found: list[tried.Outcome], sessions: list[Path]) -> list[str]:
    """The try's answer: each fix's line, the winners first, and the lines that keep them."""
    if not found:
        return ["try: no fix ran (see the sessions' summaries)"]
    order = {code: k for k, code in enumerate((tried.HELPED, tried.START, tried.NO_BETTER,
                                               tried.CANNOT_TELL, tried.PENDING, tried.WORSE,
                                               tried.NOT_APPLIED, tried.FAILED))}
    lines = ["tried:"]
    for o in sorted(found, key=lambda o: (order[o.code], -(o.speedup or 0.0))):
        lines.append(f"  {outcome_line(o)}")
        if (loss := loss_line(o)) is not None:
            lines.append(loss)
    keep = [o for o in found if o.code in (tried.HELPED, tried.START)]
    if keep:
        best = max(keep, key=lambda o: (o.code == tried.HELPED, o.speedup or 0.0))
        lines.append(f"to keep {best.fix.replace(fixes.JOIN, ' + ')}, write (docs/try.md):")
        lines += keep_lines(best.fix)
    lines += [f"session: {s}" for s in sessions]
    return lines


def fix_hint(p: tried.Pick) -> str | None:
    """Beside a finding in the TUI's why pane: the fix its t adds ('t → dynamic: dynamic shapes
    (torch.compile(dynamic=True))'), or why none can be tried here; None when it suggests none."""
    if p.fix is not None:
        where = f" — {block_words(p.repeated)}" if p.fix == tried.REGIONAL else ""
        return f"t → {p.fix}: {fixes.FIXES[p.fix].title}{where}"
    if p.passed:
        return f"no fix to try here: {passed_text(p)}"
    return None


def no_fix_line(p: tried.Pick, label: str) -> str:
    """The TUI's notice when t has nothing to add for the selected finding."""
    if p.passed:
        return f"t: no fix of this finding can be tried on {label}: {passed_text(p)}"
    return "t: this finding calls for no fix tuimon can try (w lists what to try by hand)"


def passed_text(p: tried.Pick) -> str:
    return ", ".join(f"{name} ({PASSED.get(why, why)})" for name, why in p.passed)


def outcome_figures(o: tried.Outcome) -> dict:
    """A fix's outcome as data: its figures, its reasons as the summary's other points are kept."""
    return asdict(o) | {"unsure": [p.to_dict() for p in o.unsure]}


def section(summary: SessionSummary) -> Section:
    """The "Tried" section for a session that raced fixes (its fix axis): each fix's outcome,
    then how to keep each that helped (empty otherwise)."""
    found = tried.outcomes(summary)
    lines = [Line(TRIED, outcome_line(o), outcome_figures(o)) for o in found]
    lines += [Line(KEEP, f"To keep **{o.fix}** (docs/try.md):", {"fix": o.fix},
                   tuple(Line(CODE, line[4:]) for line in keep_lines(o.fix)))
              for o in found if o.code in (tried.HELPED, tried.START)]
    return Section("tried", "Tried (tuimon try)", tuple(lines))
