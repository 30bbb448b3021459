"""tuimon try's regional is suggested only where the model has a repeated block: the child says
its compiled model's (runner/fixes.py repeated_note, a recipe's runner and a script's compiles),
the fold keeps it on the row (stats/apply.py), and the plan and the TUI's t weigh it
(analysis/tried.py), worded in report/try_text.py ("if it has a repeated block" when unknown)."""

from pathlib import Path

import torch
from test_tried import finding
from test_verdict import session, variant

from tuimon import events
from tuimon.analysis import diagnose, summarize, tried
from tuimon.report import try_text
from tuimon.runner.fixes import repeated_note
from tuimon.runner.script.compile_modes import CompileModes


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x).relu()


class Net(torch.nn.Module):
    def __init__(self, depth: int):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(depth))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def test_the_child_says_the_repeated_block_or_that_there_is_none():
    assert repeated_note(Net(3)) == ("Net: 3 blocks of Block repeat",
                                     {"model": "Net", "block": "Block", "count": 3})
    text, fact = repeated_note(Net(1))
    assert text == "Net: no repeated block (regional compilation would compile it whole)"
    assert fact == {"model": "Net", "block": None, "count": 0}


def test_a_scripts_compile_says_the_compiled_modules_repeated_block():
    said = []
    modes = CompileModes("default", True, lambda text, **fields: said.append((text, fields)))
    modes._orig_compile = lambda model, **kwargs: model  # no compile: what is said is checked
    model = Net(2)
    assert modes.compile_call(model, {}) is model
    assert ("Net: 2 blocks of Block repeat",
            {"repeated": {"model": "Net", "block": "Block", "count": 2}}) in said
    eager = CompileModes("eager", True, lambda text, **fields: said.append((text, fields)))
    said.clear()
    eager.compile_call(Net(2), {})  # disabled in eager: nothing compiled, nothing said of blocks
    assert not any("repeated" in fields for _, fields in said)


def noted(evs: list[dict], run: str, count: int, block: str | None = "Block") -> list[dict]:
    return evs + [events.make(events.MODEL, run, text="...",
                              repeated={"model": "Net", "block": block, "count": count})]


def planned(count: int | None):
    """A session whose default/fp32 pays off later than it ran (payoff: regional), its model's
    repeated block said (``count``) or not (None)."""
    evs = session(variant("eager", "fp32", 10.0, seed=1),
                  variant("default", "fp32", 8.0, seed=2, compile_s=20))
    if count is not None:
        evs = noted(evs, "default-fp32-1", count, "Block" if count else None)
    s = summarize(evs)
    whys = diagnose(s)
    base = next(w for w in whys if w.run.startswith("default"))
    base.findings = [finding("payoff.later", 1.0)]
    return s, tried.plan(s, whys)


def test_the_fold_keeps_the_most_repeated_of_a_runs_compiled_modules():
    evs = session(variant("eager", "fp32", 10.0, seed=1, processes=1),
                  variant("default", "fp32", 8.0, seed=2, compile_s=20, processes=1))
    evs = noted(noted(evs, "default-fp32", 8), "default-fp32", 0, None)
    rows = {r.run: r for r in summarize(evs).runs}
    assert rows["default-fp32"].repeated == {"model": "Net", "block": "Block", "count": 8}
    assert rows["eager-fp32"].repeated is None


def test_the_plan_races_regional_only_on_a_model_with_a_repeated_block():
    s, plan = planned(8)
    assert s.variants and next(r for r in s.variants if r.mode == "default").repeated["count"] == 8
    assert plan.raced == ["regional"]
    assert try_text.plan_lines(plan, Path("s"))[1].endswith(" — 8 blocks of Block")
    _, plan = planned(0)
    assert plan.raced == [] and plan.candidates[0].cannot == tried.NO_BLOCK
    lines = try_text.plan_lines(plan, Path("s"))
    assert "  cannot try here: regional (no repeated block in Net)" in lines
    _, plan = planned(None)  # an older session: not known, raced, and said so
    assert plan.raced == ["regional"]
    assert try_text.plan_lines(plan, Path("s"))[1].endswith(" — if it has a repeated block")


def test_the_tuis_t_passes_regional_over_on_a_model_without_a_repeated_block():
    none = tried.pick(["regional"], on_cuda=False, is_script=True, compiled=True,
                      repeated={"model": "GPT", "block": None, "count": 0})
    assert none.fix is None and none.passed == (("regional", tried.NO_BLOCK),)
    assert try_text.fix_hint(none) == "no fix to try here: regional (no repeated block)"
    some = tried.pick(["regional"], on_cuda=False, is_script=True, compiled=True,
                      repeated={"model": "GPT", "block": "Block", "count": 4})
    assert try_text.fix_hint(some).endswith("(each repeated block compiled, not the whole model) — "
                                            "4 blocks of Block")
    unknown = tried.pick(["regional"], on_cuda=False, is_script=True, compiled=True)
    assert try_text.fix_hint(unknown).endswith(" — if it has a repeated block")
