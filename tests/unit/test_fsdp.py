"""FSDP2 (issue 44): a fully_shard-ed model's per-block compiles read and said (the script's, in
the compiled variants and turned off in the eager one; tuimon's own when the script compiles
none), a job's loop reading taken from its lead rank, and each rank's time in FSDP's all-gathers
and reduce-scatters from the runner's component (runner/fsdp_waits.py) to the table's words.
The models here are real FSDP2 ones, sharded over a one-rank gloo group in this process."""

from __future__ import annotations

import time

import pytest
import torch
import torch.distributed as dist
from test_rank_stats import job_events
from test_stats import run_events

from tuimon import events
from tuimon.analysis import summarize
from tuimon.report import sections
from tuimon.report.table import table
from tuimon.runner.emitter import Emitter
from tuimon.runner.fsdp_waits import FsdpWaits
from tuimon.runner.script.anatomy import Anatomy as Reading
from tuimon.runner.script.compile_modes import CompileModes
from tuimon.runner.script.lead import Lead

fully_shard = pytest.importorskip("torch.distributed.fsdp").fully_shard


class TransformerBlock(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mlp = torch.nn.Linear(8, 8)

    def forward(self, x):
        return x + self.mlp(x)


class Transformer(torch.nn.Module):
    def __init__(self, n: int = 3) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(TransformerBlock() for _ in range(n))
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


@pytest.fixture(scope="module")
def group(tmp_path_factory):
    """A one-rank gloo process group: what fully_shard needs to shard a model in this process."""
    if dist.is_initialized():
        pytest.skip("a process group is already up in this process")
    store = tmp_path_factory.mktemp("pg") / "store"
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def read_fsdp_loop(mode: str, script_compiles: bool):
    """A script's first step on a fully_shard-ed Transformer, in a variant of ``mode``: the
    reading of its optimizer's module, the notes said, and the model."""
    said = []
    anatomy = Reading(Emitter(None, "r"), Lead(lambda text, **f: None))
    modes = CompileModes(mode, True, lambda text, **f: said.append(text), anatomy=anatomy)
    modes._orig_compile = lambda fn, **kw: fn  # what would be compiled, not a compile
    modes._orig_module_compile = lambda m, *a, **kw: object.__setattr__(
        m, "_compiled_call_impl", m._call_impl)
    model = Transformer()
    for block in model.layers:
        if script_compiles:
            modes.module_compile_call(block, (), {})  # the script's block.compile()
        fully_shard(block)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters())
    anatomy.made(opt)
    modes.optimizer_made(opt)
    model(torch.randn(2, 8)).sum().backward()
    modes.trained.first_step(optimizers=1)
    (row,) = anatomy.optimizers
    return row, said, model


def test_the_scripts_per_block_compiles_are_read_as_such(group):
    row, said, model = read_fsdp_loop("default", script_compiles=True)
    assert (row.module, row.compiled, row.blocks) == (
        "Transformer (fully_shard)", "script-blocks", {"class": "TransformerBlock", "count": 3})
    assert all(b._compiled_call_impl is not None for b in model.layers)


def test_the_eager_variant_turns_the_scripts_per_block_compiles_off_and_says_so(group):
    row, said, model = read_fsdp_loop("eager", script_compiles=True)
    assert (row.compiled, row.blocks) == ("variant", {"class": "TransformerBlock", "count": 3})
    assert all(b._compiled_call_impl is None for b in model.layers)  # eager really eager
    # said once a run (steps.note keeps one of each text)
    assert set(said) == {"the script's Module.compile is disabled in the eager variant"}


def test_tuimon_compiles_a_fully_shard_ed_model_per_block_when_the_script_compiles_none(group):
    row, said, model = read_fsdp_loop("default", script_compiles=False)
    assert (row.compiled, row.blocks) == ("tuimon-blocks", {"class": "TransformerBlock", "count": 3})
    assert all(b._compiled_call_impl is not None for b in model.layers)
    assert model._compiled_call_impl is None  # the root (its FSDP hooks, the head) stays eager
    assert any(t.startswith("the script never calls torch.compile: tuimon compiled Transformer "
                            "per block (3 × TransformerBlock") for t in said)


def loop_lines(evs) -> list[str]:
    return [x.text for x in sections.document({}, summarize(evs), only=("loop",))["loop"].lines]


def reading(run: str, compiled: str, rank=None) -> dict:
    return events.make(events.ANATOMY, run, steps=40, ends_at="optimizer.step", optimizers=[
        {"optimizer": "AdamW", "params": 216576, "steps": 40, "module": "Transformer (fully_shard)",
         "compiled": compiled, "beside": None, "blocks": {"class": "TransformerBlock", "count": 8},
         "lead": True, "every": 1.0}], backwards={"1": 40}, loss_sums={"1": 40}, outside={},
        trainings=[], lead_changes=1, **({"rank": rank} if rank is not None else {}))


def test_the_loop_says_per_block_compiles_in_each_variant():
    evs = run_events("eager-script", "eager", "script", [5.0] * 40)
    evs.insert(-2, reading("eager-script", "variant"))
    more = run_events("default-script", "default", "script", [4.0] * 40)
    more.insert(-2, reading("default-script", "script-blocks"))
    lines = loop_lines(evs + more)
    assert ("eager/script: Transformer (fully_shard) eager (the eager variant); the script's "
            "per-block compiles (8 × TransformerBlock) turned off") in lines
    assert ("default/script: Transformer (fully_shard) compiled per block by the script: "
            "8 × TransformerBlock") in lines


def test_a_jobs_loop_is_its_lead_ranks_reading():
    evs = job_events(run="default-script", mode="default", steps=40)
    evs.insert(-1, reading("default-script", "tuimon-blocks", rank=1))
    evs.insert(-1, reading("default-script", "tuimon-blocks", rank=0))
    lines = loop_lines(evs)
    assert lines[0].startswith("step: one `AdamW.step()` (Transformer (fully_shard), 216,576 parameters)")
    assert any("compiled per block by tuimon" in t and "8 × TransformerBlock" in t for t in lines)


# ---- FSDP's collectives ------------------------------------------------------------------
class FakeGroup:
    """FSDP2's FSDPParamGroup's timed methods, each taking a known time."""

    def unshard(self, async_op=False):
        time.sleep(0.002)

    def wait_for_unshard(self):
        self.unshard()  # a call inside a timed one is counted once, as the outer one's
        time.sleep(0.001)


class FakeGroupModule:
    FSDPParamGroup = FakeGroup

    @staticmethod
    def foreach_reduce(*args):
        time.sleep(0.004)


class FakeEngine:
    def __init__(self) -> None:
        self.i = 0
        self.emitter = self
        self.said: list[dict] = []

    def emit(self, kind, **fields):
        self.said.append({"type": kind, **fields})


def test_the_time_in_fsdps_collectives_goes_out_in_windows_and_the_patches_go_at_the_end():
    engine, module = FakeEngine(), FakeGroupModule()
    before = (FakeGroup.unshard, FakeGroup.wait_for_unshard, FakeGroupModule.foreach_reduce)
    waits = FsdpWaits(module, lambda: False)
    waits.start(engine)
    for engine.i in range(20):
        if engine.i == waits.due:
            waits.boundary(engine, engine.i)
        group = FakeGroup()
        group.unshard()
        group.wait_for_unshard()
        module.foreach_reduce()
    engine.i = 20
    waits.end(engine)
    assert (FakeGroup.unshard, FakeGroup.wait_for_unshard, FakeGroupModule.foreach_reduce) == before
    first, last = engine.said
    idle = FakeEngine()  # FSDP2 imported, never run (a DDP script): nothing said, not zeros
    waits = FsdpWaits(module, lambda: False)
    waits.start(idle)
    idle.i = 20
    waits.boundary(idle, 16)
    waits.end(idle)
    assert idle.said == []
    assert (first["steps"], last["steps"]) == ([0, 16], [16, 20])
    assert first["calls"] == {"all_gather": 32, "reduce_scatter": 16}
    per_step = {k: v / 16 * 1000 for k, v in first["seconds"].items()}
    assert 5.0 <= per_step["all_gather"] < 15.0 and 4.0 <= per_step["reduce_scatter"] < 12.0


def collectives(run, rank, steps, ag, rs):
    return events.make(events.COLLECTIVES, run, rank=rank, steps=steps, what="fsdp",
                       seconds={"all_gather": ag, "reduce_scatter": rs},
                       calls={"all_gather": 10, "reduce_scatter": 5})


def table_row(evs, name="FSDP all-gather / reduce-scatter a step (time in them, per rank)"):
    summary = summarize(evs)
    header, rows = table(summary)
    return [row for row in rows if row[0] == name], summary


def test_each_ranks_wait_in_fsdps_collectives_is_its_steady_windows_mean():
    evs = job_events(run="eager-script", steps=120)
    evs[-1:-1] = [collectives("eager-script", 0, [0, 16], 5.0, 5.0),  # the warm-up's: left out
                  collectives("eager-script", 0, [16, 120], 0.52, 0.312),
                  collectives("eager-script", 1, [0, 16], 5.0, 5.0),
                  collectives("eager-script", 1, [16, 120], 1.04, 0.104)]
    (row,), summary = table_row(evs)
    assert summary.runs[0].timing.steady_from <= 16
    assert row[1] == ("r0 all-gather 5.00 ms · reduce-scatter 3.00 ms; "
                      "r1 all-gather 10.0 ms · reduce-scatter 1.00 ms")


def test_a_ddp_job_has_no_collectives_row_and_a_short_fsdp_one_cannot_tell():
    assert table_row(job_events(steps=60))[0] == []
    evs = job_events(steps=60)
    evs[-1:-1] = [collectives("eager-script", r, [0, 60], 1.0, 1.0) for r in (0, 1)]
    (row,), _ = table_row(evs)
    assert row[1] == "cannot tell: no window of steps past the warm-up (run more steps)"


def test_a_fully_shard_ed_module_is_named_for_its_own_class(group):
    from tuimon.runner.script.anatomy import _name

    model = Transformer(1)
    fully_shard(model)
    assert _name(model) == "Transformer (fully_shard)"
    assert _name(torch.compile(model)) == "Transformer (fully_shard, torch.compile)"


def test_the_rank_view_heads_an_fsdp_job_with_its_collectives():
    from types import SimpleNamespace

    from tuimon.ui.widgets.rank_view import head

    evs = job_events(run="eager-script", steps=120)
    evs[-1:-1] = [collectives("eager-script", r, [16, 120], 0.52, 0.312) for r in (0, 1)]
    (row,) = summarize(evs).runs
    live = SimpleNamespace(label="eager/script", ranks={}, state="done")
    assert ("FSDP all-gather / reduce-scatter a step: r0 all-gather 5.00 ms · reduce-scatter "
            "3.00 ms; r1 all-gather 5.00 ms") in head(live, row).plain
    (ddp,) = summarize(job_events(run="eager-script", steps=120)).runs
    assert "FSDP" not in head(live, ddp).plain
