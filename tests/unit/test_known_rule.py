"""--until-known's stopping rule (issue 42) on synthetic step streams: what a process still needs
(analysis/stats/known.py), and the running side (control/until_known.py) driven round by round
as the supervisor drives it, with a fake table and stopper: it asks a round's processes to stop
at the step the rule says and not before, looks after each round, and ends the session once the
answer is known, at the design's last round, or when the budget is spent."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import jsonschema

from tuimon import events
from tuimon.analysis import summarize
from tuimon.analysis.stats import known
from tuimon.analysis.stats.known import ROUND_STEPS, SETTLE_STEPS, ProcessTrack, process_state
from tuimon.analysis.stats.sequential import Design
from tuimon.control.runs import Run
from tuimon.control.until_known import UntilKnown
from tuimon.report import export, known_text, schema
from tuimon.report.export import to_markdown
from tuimon.variants import Variant

# 250 ms a step: ROUND_S (6 s) of steady steps is 24 of them, so ROUND_STEPS (40) decides, and a
# process is ready SETTLE_STEPS + ROUND_STEPS steps after its last compile.
EAGER_MS = 250.0


def step(run: str, i: int, t: float, ms: float, **extra) -> dict:
    return events.make(events.STEP, run, i=i, t=t, ms=ms, data_ms=0.1, n=32, loss=1.0,
                       phase="warmup" if i < 3 else "steady", **extra)


# ---- what one process still needs --------------------------------------------------------------
def states_of(stream: list[dict], first_round: bool = True) -> list[str]:
    """What the process needs after each of its steps (other events folded as they come)."""
    track, out = ProcessTrack(), []
    for e in stream:
        track.add(e)
        if e["type"] == events.STEP:
            out.append(process_state(track, False, first_round, 900.0).code)
    return out


def first_ready(codes: list[str]) -> int:
    return codes.index("ready")


def test_a_process_is_ready_once_its_compiles_settled_and_it_measured_enough():
    stream = [step("d", i, i * 0.25, EAGER_MS, **({"compile_ms": 900.0} if i == 0 else {}))
              for i in range(200)]
    codes = states_of(stream)
    assert codes[0] == "settling" and codes[SETTLE_STEPS - 1] == "settling"
    assert codes[SETTLE_STEPS + 1] == "steps"
    assert first_ready(codes) == SETTLE_STEPS + ROUND_STEPS  # not one step before
    assert process_state(ProcessTrack(), True, True, 900.0).code == "compiling"
    assert process_state(ProcessTrack(), False, True, 900.0).code == "building"


def test_a_late_recompile_starts_the_count_again():
    stream = [step("d", i, i * 0.25, EAGER_MS, **({"compile_ms": 900.0} if i in (0, 80) else {}))
              for i in range(300)]
    codes = states_of(stream)
    assert codes[79] == "ready"  # ready since step 60: a process still stepping may recompile
    assert codes[80] == "settling"
    assert codes.index("ready", 80) == 80 + SETTLE_STEPS + ROUND_STEPS


def test_fast_steps_need_seconds_of_them_too():
    stream = [step("d", i, i * 0.01, 10.0) for i in range(1000)]
    codes = states_of(stream)
    # ROUND_S of 10 ms steps: 600 steady steps after the first SETTLE_STEPS.
    assert abs(first_ready(codes) - (SETTLE_STEPS + 600)) <= 1


def anatomy(run: str, epoch: int | None) -> dict:
    return events.make(events.ANATOMY, run, steps=8, ends_at="optimizer.step", backwards={"1": 8},
                       epoch=epoch)


def validation_stream(run: str, epoch: int, compiles: bool, pass_compiles: bool = False,
                      steps: int = 400) -> list[dict]:
    """A script's steps with its training loader's epoch said at step 8 and a validation pass in
    the step that ends each epoch (a gap). A script's pass compiles in events of its own (the
    step holds none of it: test_script_compile_runs); ``pass_compiles`` puts it in the step."""
    out = []
    for i in range(steps):
        extra = {}
        if compiles and i == 0:
            extra["compile_ms"] = 900.0
        if i and i % epoch == 0:
            extra["gap"] = True
            if pass_compiles and i == epoch:
                extra["compile_ms"] = 700.0
        out.append(step(run, i, i * 0.25, EAGER_MS, **extra))
        if i == 8:
            out.append(anatomy(run, epoch))
    return out


def test_round_one_waits_for_the_first_validation_pass():
    """Its loader says 100 batches an epoch: round 1 steps to step 100, where the validation pass
    runs (and compiles), though it had measured enough at step 60; a later round does not wait."""
    codes = states_of(validation_stream("d", 100, compiles=True))
    assert codes[70] == "epoch"
    assert first_ready(codes) == 100  # the pass seen, and enough measured before it
    later = states_of(validation_stream("d", 100, compiles=True), first_round=False)
    assert first_ready(later) == SETTLE_STEPS + ROUND_STEPS
    # a pass whose compile lands in its step starts the settling again
    codes = states_of(validation_stream("d", 100, compiles=True, pass_compiles=True))
    assert first_ready(codes) == 100 + SETTLE_STEPS + ROUND_STEPS
    # an epoch too long for the budget's share is not waited for
    track = ProcessTrack()
    for e in validation_stream("d", 10_000, compiles=True, steps=100):
        track.add(e)
    assert process_state(track, False, True, 60.0).code == "ready"


# ---- the session: rounds, looks and the end ----------------------------------------------------
class Session:
    """UntilKnown wired as the supervisor wires it: every recorded event folded into it, a stop
    taken at the run's next step (as the runner takes its stop line), an exit reported."""

    def __init__(self, speedup: float, noise: float = 0.004, margin: float = 0.03,
                 max_rounds: int = 20, late_compile: int | None = None, seed: int = 5) -> None:
        self.speedup, self.noise, self.late_compile = speedup, noise, late_compile
        self.rng = random.Random(seed)
        spec = {**Design(margin=margin, max_rounds=max_rounds).to_dict(), "budget_s": 900.0}
        self.variants = [Variant("eager", "fp32"), Variant("default", "fp32")]
        self.plan = SimpleNamespace(answer={"until_known": spec}, schedule="interleave",
                                    variants=self.variants)
        self.table = SimpleNamespace(runs={}, live={}, queue=[], state=lambda run: "running")
        self.asked: dict[str, int] = {}  # run -> the step after which its stop was asked
        self.everything = False
        self.stopper = SimpleNamespace(stop=self._stop, stop_everything=self._stop_everything,
                                       budget_spent=False)
        self.recorded: list[dict] = []
        self.t = 1000.0
        self.uk = UntilKnown(self.plan, self.table, self.record, self.stopper, self.queue_round,
                             lambda: True)
        self.record([events.make(events.SESSION_STARTED, schedule="interleave", repeats=1,
                                 until_known=spec)])
        self.queue_round(1)

    def record(self, batch: list[dict]) -> None:
        self.recorded += batch
        for e in batch:
            self.uk.fold(e)

    def _stop(self, r) -> None:
        if not r.stop_asked:
            r.stop_asked = True
            self.asked[r.id] = self.uk.tracks[r.id].last_i

    def _stop_everything(self) -> None:
        self.everything = True
        for r in self.table.live.values():
            self._stop(r)

    def queue_round(self, k: int) -> None:
        for v in self.variants:
            run = f"{v.mode}-fp32-{k}"
            self.record([events.make(events.RUN_QUEUED, run, **v.fields(), replicate=k, repeats=None),
                         events.make(events.RUN_STARTED, run, **v.fields(), device="cpu",
                                     device_name="x86_64", params=1000, batch_size=32)])
            state = self.uk.collector.state.runs[run]
            self.table.runs[run] = Run(run, v, replicate=k, state=state)
            self.table.live[run] = self.table.runs[run]
            self.table.runs[run].level = self.rng.gauss(0.0, self.noise)  # this process's luck

    def run_round(self) -> None:
        """The round's runs step in turn, one step each a tick, until each has been asked to stop
        (it then ends at that step's boundary)."""
        drift = self.rng.gauss(0.0, 0.2)  # the machine's speed this round, every process alike
        mine = list(self.table.live)
        i = 0
        while any(run in self.table.live for run in mine):
            for run in mine:
                r = self.table.live.get(run)
                if r is None:
                    continue
                if r.stop_asked:
                    self.record([events.make(events.FINISHED, run, reason="stopped", t=self.t)])
                    del self.table.live[run]
                    self.uk.exited(run)
                    continue
                ms = EAGER_MS * (1 if r.variant.mode == "eager" else 1 / self.speedup)
                ms *= 2.718281828 ** (drift + r.level) * self.rng.uniform(0.99, 1.01)
                extra = {}
                if r.variant.compiled and (i == 0 or (i == self.late_compile and r.replicate == 1)):
                    extra["compile_ms"] = 900.0
                self.t += ms / 1000.0
                self.record([step(run, i, self.t, ms, **extra)])
                if extra:
                    self.record([events.make(events.COMPILE, run, compile_id=f"0/{i}", forward=True,
                                             seconds=0.9, graph_ops=12, phases={})])
            self.uk.tick()
            i += 1
            assert i < 5000, "the round never ended"

    def run(self) -> known.Known:
        rounds = 0
        while not self.uk.over:
            self.run_round()
            rounds += 1
            assert rounds <= 25
        return known.Known.from_dict(self.ends()[-1]["known"])

    def ends(self) -> list[dict]:
        return [e for e in self.recorded if e["type"] == events.KNOWN and e["action"] == "end"]

    def looks(self) -> list[dict]:
        return [e["known"] for e in self.recorded if e["type"] == events.KNOWN and e["action"] == "look"]


def test_a_clear_speedup_stops_at_the_first_look_each_round_where_the_rule_says():
    s = Session(speedup=1.4)
    end = s.run()
    assert end.stopped == "known" and end.code == "faster" and end.rounds == 3
    assert [x["code"] for x in s.looks()] == ["rounds", "rounds", "faster"]
    # each round's processes stopped together, once the compiled one was ready: 60 steps after
    # its compile at step 0 (the eager one was ready a step earlier and kept stepping with it)
    assert set(s.asked.values()) == {SETTLE_STEPS + ROUND_STEPS}
    assert not s.everything  # nothing was cut short: each round ended at its processes' stops
    summary = summarize(s.recorded)
    assert summary.verdict.code == "use" and summary.known.stopped == "known"
    text = to_markdown({}, summary)
    assert "Stopped after 3 rounds" in text and "the answer was known" in text
    doc = json.loads(export.to_json({}, summary))
    jsonschema.Draft202012Validator(json.loads(schema.SCHEMA.read_text())).validate(doc)
    assert doc["known"]["stopped"] == "known" and doc["known"]["line"].startswith("Stopped after 3")
    assert doc["until_known"]["margin"] == 0.03 and doc["noise"]["sequential"]["spending"] == "pocock"


def test_a_late_recompile_holds_its_round_open_until_it_settled():
    """A recompile at step 50, ten steps before the round would have ended: its processes step on
    until 60 steps after it."""
    s = Session(speedup=1.4, late_compile=50)
    s.run()
    assert s.asked["default-fp32-1"] == 50 + SETTLE_STEPS + ROUND_STEPS
    assert s.asked["eager-fp32-1"] == 50 + SETTLE_STEPS + ROUND_STEPS
    assert s.asked["default-fp32-2"] == SETTLE_STEPS + ROUND_STEPS  # round 2 did not recompile


def test_no_difference_on_a_quiet_machine_is_the_same_within_the_margin():
    end = Session(speedup=1.0, noise=0.002).run()
    assert end.stopped == "known" and end.code == "same"
    assert 3 <= end.rounds <= 6
    summary = None
    s = Session(speedup=1.0, noise=0.002)
    s.run()
    summary = summarize(s.recorded)
    assert summary.verdict.code == "same"
    assert "within ±3 %" in to_markdown({}, summary)


def test_too_noisy_to_tell_stops_at_the_designs_last_round_not_before():
    s = Session(speedup=1.02, noise=0.3, max_rounds=5)
    end = s.run()
    assert end.stopped == "max_rounds" and end.rounds == 5
    assert all(x["code"] in ("rounds", "interval") for x in s.looks())
    assert "answer is what it is" in known_text.stop_text(end)


def test_a_spent_budget_ends_the_session_at_the_round_under_way():
    s = Session(speedup=1.02, noise=0.3)
    s.run_round()
    s.stopper.budget_spent = True  # the Stopper stopped every run; the round ends with them
    s.run_round()
    assert s.uk.over
    end = known.Known.from_dict(s.ends()[-1]["known"])
    assert end.stopped == "budget" and end.rounds == 2
    assert "--budget" in known_text.stop_text(end)


def test_progress_says_what_is_missing_and_the_time_left():
    s = Session(speedup=1.4)
    s.run_round()
    progress = [known.Known.from_dict(e["known"]) for e in s.recorded
                if e["type"] == events.KNOWN and e["action"] == "progress" and e["known"]["round"] == 1]
    codes = [k.code for k in progress]
    assert codes[0] == "settling" and "steps" in codes
    line = known_text.progress_text(progress[-1])
    assert line.startswith("until known: round 1")
    assert "to a verdict within ±3 %" in line or "not known yet" in line


def test_the_stop_says_the_rounds_run_and_those_weighed():
    """A round beside other processes' load is left out of every variant (a real session on this
    VM: six rounds, rounds 4 and 6 left out)."""
    k = known.Known("interval", round=6, rounds=4, budget_s=60.0, stepped_s=61.0, about="default/fp32",
                    speedup=0.92, lo=0.46, hi=1.84, stopped="budget")
    assert known_text.stop_text(k) == (
        "Stopped after 6 rounds (4 of them weighed): the --budget of 60.0 s of stepping was spent, "
        "and the answer is what it is (default/fp32 at 0.92× (95 % CI 0.46–1.84) was not decided "
        "yet); a longer --budget measures on.")
    waiting = known.Known("steps", round=2, rounds=1, about="eager/fp32", left=0, left_s=4.2)
    assert "eager/fp32 measuring (4 s of steady state to go)" in known_text.progress_text(waiting)


def test_the_look_on_the_verdicts_own_answers():
    """More rounds cannot bring an answer when nothing compiled; an unreliable comparison after
    the first look is said as such, not as the speedup its interval shows."""
    design = Design()
    cand = [{"label": "default/fp32", "speedup": 1.3, "lo": 1.2, "hi": 1.4}]

    def summary(code: str, rounds: int):
        return SimpleNamespace(noise=SimpleNamespace(rounds=rounds, round_df=rounds - 1),
                               verdict=SimpleNamespace(code=code, candidates=cand))

    assert known.look(summary("nothing_compiled", 1), design).code == "no_answer"
    assert known.look(summary("unreliable", 2), design).code == "rounds"
    assert known.look(summary("unreliable", 3), design).code == "unreliable"
    assert known.look(summary("use", 3), design).code == "faster"
    end = known.Known("unreliable", round=3, rounds=3, stopped="known")
    assert "the comparison is unreliable" in known_text.stop_text(end)


def test_a_run_that_failed_ends_the_session_after_its_round():
    s = Session(speedup=1.02, noise=0.3)
    s.run_round()
    s.table.state = lambda run: "failed" if run == "default-fp32-2" else "running"
    s.run_round()
    assert s.uk.over
    end = known.Known.from_dict(s.ends()[-1]["known"])
    assert end.stopped == "failed" and end.round == 2
    assert "a run failed" in known_text.stop_text(end)
