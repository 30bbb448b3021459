"""Issue 8 on a real GPU: tuimon adds no host-device sync per step, the step's phases (issue 25)
and memory per phase (issue 35) included. Skipped without CUDA.

Real sessions with TUIMON_SYNC_DEBUG=error (runner/syncdebug.py): torch.cuda's sync debug mode
is "error" around tuimon's own per-step work, so a sync there (a loss read with .item(), a
torch.cuda.synchronize in the clock, ...) fails the run; the recipe's step is left alone, so a
recipe's own .item() does not. Run it with ``pytest tests/e2e/test_cuda_syncs.py`` on a CUDA box.
"""

from __future__ import annotations

import pytest
from conftest import RECIPES, TEST_RECIPES

from tuimon import events
from tuimon.runner.syncdebug import ENV
from tuimon.sessiondir import store


@pytest.fixture
def cuda(monkeypatch):
    torch = pytest.importorskip("torch")  # here, not at collection: the rest of the suite needs no GPU
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    monkeypatch.setenv(ENV, "error")  # the CLI's children inherit it
    return torch


def guarded_session(session) -> tuple[list[dict], dict[str, str]]:
    evs, _ = store.read_events(session)
    finished = {e["run"]: e["reason"] for e in evs if e["type"] == events.FINISHED}
    failures = [e for e in evs if e["type"] == events.FAILED]
    assert not failures, failures
    guarded = {e["run"] for e in evs if e["type"] == events.WARNING and e["text"].startswith(f"{ENV}=error")}
    assert guarded == set(finished), "every run ran with the guard on"
    return evs, finished


def test_tiny_mlp_eager_and_compiled_on_cuda_add_no_sync(cuda, tuimon):
    proc, session = tuimon(str(RECIPES / "tiny_mlp.py"), "--device", "cuda", "--modes", "eager,default",
                           "--headless", "--steps", "300", "--warmup", "20")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    evs, finished = guarded_session(session)
    assert finished == {"eager-fp32": "steps", "default-fp32": "steps"}
    for run in finished:
        steps = [e for e in evs if e["type"] == events.STEP and e["run"] == run]
        assert [e["i"] for e in steps] == list(range(300))
        assert all(e["loss"] is not None for e in steps)  # read from the pinned ring, no .item()
        assert_split(steps)
        assert_memory(evs, run)


def assert_memory(evs: list[dict], run: str) -> None:
    """Memory per phase (issue 35), read under the guard at the phases' marks: two steps kept
    apart (``mem``), forward's, backward's and the optimizer's peaks, the device's room."""
    found = [e for e in evs if e["type"] == events.MEMORY_PHASES and e["run"] == run and "phases" in e]
    assert found, f"{run}: no memory per phase"
    last = found[-1]
    assert len(last["steps"]) == 2 and last["total"] > 0 and last["budget"] > 0, last
    assert all(last["phases"][p]["peak"] > 0 for p in ("forward", "backward", "optimizer")), last
    marked = {e["i"] for e in evs if e["type"] == events.STEP and e["run"] == run and e.get("mem")}
    assert set(last["steps"]) <= marked


def assert_split(steps: list[dict], parts: int = 4) -> None:
    """Every steady step split into its phases, from CUDA events read later (issue 25): the
    first ``parts`` of data, forward, backward, optimizer seen, and the split within the step."""
    steady = [e for e in steps if e["phase"] == "steady" and not e.get("compile_ms")]
    assert steady
    for e in steady:
        ph = e["ph"][:parts]
        assert None not in ph and all(v >= 0 for v in ph), e
        assert sum(v for v in e["ph"] if v is not None) <= e["ms"] * 1000 * 1.001 + 1, e


def test_a_recipes_own_sync_is_not_tuimons(cuda, tuimon):
    proc, session = tuimon(str(TEST_RECIPES / "item_in_forward.py"), "--device", "cuda", "--modes",
                           "eager", "--headless", "--steps", "50", "--warmup", "5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert guarded_session(session)[1] == {"eager-fp32": "steps"}


def test_the_mode_catches_a_sync_in_tuimons_own_work(cuda, monkeypatch):
    """The control: reading the loss with float() (an .item()) in the loop's bookkeeping, as a
    regression would, fails the step on this torch."""
    from test_profiling import ListEmitter

    from tuimon.recipe import Recipe
    from tuimon.runner import recipe_loop
    from tuimon.runner.steps import LossReader
    from tuimon.runner.syncdebug import SyncGuard
    from tuimon.runner.trainer import Trainer

    torch = cuda
    model = torch.nn.Linear(8, 2).cuda()
    recipe = Recipe(model, torch.optim.SGD(model.parameters(), lr=0.1), torch.nn.CrossEntropyLoss(),
                    [(torch.randn(4, 8, device="cuda"), torch.randint(0, 2, (4,), device="cuda"))])
    trainer = Trainer(recipe, "cuda")
    monkeypatch.setattr(LossReader, "capture", lambda self, i, loss: float(loss))
    before = torch.cuda.get_sync_debug_mode()
    with pytest.raises(RuntimeError, match="synchroniz"):
        recipe_loop.train_steps(trainer, ListEmitter(), 5, guard=SyncGuard(torch.cuda, "error"))
    assert torch.cuda.get_sync_debug_mode() == before  # given back even when the step fails


def test_a_scripts_hooks_add_no_sync(cuda, tuimon):
    """`tuimon run -- python amp_scaler.py` on CUDA: the hooks (boundary, loss copy, batches)
    under the guard; the script's own GradScaler and .item() are its business."""
    import sys

    from conftest import SCRIPTS

    proc, session = tuimon("run", "--headless", "--modes", "eager,default", "--steps", "200", "--",
                           sys.executable, str(SCRIPTS / "amp_scaler.py"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    evs, finished = guarded_session(session)
    assert finished == {"eager-script": "steps", "default-script": "steps"}
    for run in finished:
        started = next(e for e in evs if e["type"] == events.RUN_STARTED and e["run"] == run)
        assert started["device"].startswith("cuda")
        steps = [e for e in evs if e["type"] == events.STEP and e["run"] == run]
        assert len(steps) == 200 and all(e["loss"] is not None for e in steps)
        assert_split(steps)  # the hooks' marks: events recorded under the guard
        assert_memory(evs, run)  # ... and the allocator read at them
