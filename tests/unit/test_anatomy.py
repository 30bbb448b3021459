"""Issue 40: how tuimon read a script's loop, as data, checked against the script's own numbers,
and worded. The child's side (which backward() losses a step keeps, a double backward's module
left eager, the printed numbers read from a log) and the reading's statistics and words, on
synthetic events; the real scripts run in tests/e2e/test_anatomy_runs.py."""

from __future__ import annotations

from dataclasses import replace

import torch
from test_stats import run_events

from tuimon import events
from tuimon.analysis import summarize
from tuimon.analysis.stats.anatomy import Anatomy, checked
from tuimon.control.printed import printed_numbers
from tuimon.report import sections
from tuimon.runner.emitter import Emitter
from tuimon.runner.script.anatomy import Anatomy as Reading
from tuimon.runner.script.compile_modes import CompileModes
from tuimon.runner.script.lead import Lead
from tuimon.runner.script.losses import StepLosses


def test_a_steps_loss_is_the_sum_of_the_leads_backward_losses():
    losses = StepLosses()
    for micro in (1.0, 2.0, 3.0, 4.0):  # gradient accumulation: four scaled micro-losses
        losses.backward(torch.tensor(micro / 4))
    losses.stepping()
    loss, n = losses.take()
    assert n == 4 and float(loss) == 2.5  # what a script printing loss_accum prints
    losses.backward(torch.tensor(7.0))  # a GAN's generator loss, then the generator's step
    losses.stepping()
    losses.drop()
    losses.backward(torch.tensor(0.5))  # the critic's, then the critic's (the lead's) step
    losses.stepping()
    assert [float(x) if hasattr(x, "item") else x for x in losses.take()] == [0.5, 1]
    losses.stepping()  # LBFGS: every backward() inside step(), its closure evaluated 3 times
    for value in (3.0, 2.0, 1.0):
        losses.backward(torch.tensor(value))
    loss, n = losses.take()
    assert (float(loss), n) == (3.0, 1)  # the first evaluation, as LBFGS returns it
    assert losses.take() == (None, 0)


def test_a_double_backward_leaves_its_module_eager_and_says_why():
    said = []
    anatomy = Reading(Emitter(None, "r"), Lead(lambda text, **f: None))
    modes = CompileModes("default", True, lambda text, **f: said.append(text), anatomy=anatomy)
    modes._orig_compile = lambda fn, **kw: fn
    generator, critic = torch.nn.Linear(4, 4), torch.nn.Linear(4, 1)
    opt_g = torch.optim.Adam(generator.parameters())
    opt_d = torch.optim.Adam(critic.parameters())
    for opt in (opt_g, opt_d):
        anatomy.made(opt)
        modes.optimizer_made(opt)
    mixed = generator(torch.randn(2, 4)).detach().requires_grad_(True)
    out = critic(mixed)  # a gradient penalty: the critic's gradient, differentiated again
    modes.trained.double_backward(out)
    torch.autograd.grad(out.sum(), mixed, create_graph=True)
    modes.trained.first_step(optimizers=2)
    assert [(o.module, o.compiled) for o in anatomy.optimizers] == [
        ("Linear", "tuimon"), ("Linear", "double-backward")]
    assert generator._compiled_call_impl is not None and critic._compiled_call_impl is None


def test_printed_numbers_are_read_where_a_line_names_a_step(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("effective batch size 32\nstep    0 | loss: 4.167212 | dt: 3.84ms\n"
                   "step    1 | loss: 4.158399 | dt: 3.94ms\nepoch 0: loss 4.16 (1.2s)\n"
                   "step    2 | loss: 4.159593 | dt: 3.90ms\n[Batch 10/400] [D loss: -1.2] [G loss: 0.5]\n")
    said = printed_numbers(log)
    assert said["losses"] == [[0, 4.167212], [1, 4.158399], [2, 4.159593]]  # D, G: one line each
    assert said["ms"] == [[0, 3.84], [1, 3.94], [2, 3.9]]
    # issue 40 rerun (N4): a GAN's D and G losses apart, an eval's "val loss" no step's, llama2.c's
    # "20 | loss 6.25 | ... | 81.12ms" a step, and a batch counted within its epoch no step at all
    log.write_text("".join(f"[Epoch 0/1] [Batch {b}/400] [D loss: -1.{b}] [G loss: 0.{b}]\n"
                           for b in (10, 20, 30))
                   + "".join(f"{k} | loss 6.2{k} | lr 5.0e-04 | 81.{k}ms | mfu 0.01%\n" for k in range(3))
                   + "step 20: train loss 6.22, val loss 6.25\n")
    said = printed_numbers(log)
    assert set(said["losses_by"]) == {"d", "g", ""} and said["losses_by"][""][1] == [1, 6.21]
    assert said["ms"] == [[0, 81.0], [1, 81.1], [2, 81.2]]
    log.write_text("".join(f"[Epoch {e}/2] [Batch {b}/3] [loss: 0.{b}]\n" for e in range(2)
                           for b in range(3)))
    assert printed_numbers(log) is None
    log.write_text("epoch 0: loss 1.0\nepoch 1: loss 0.9\nepoch 2: loss 0.8\n")  # no step named
    assert printed_numbers(log) is None


def test_the_printed_series_that_matches_is_the_one_checked():
    """CycleGAN prints its D loss first and its G loss after it; tuimon's loss is the G loss, so
    the check names the G loss as agreeing, never "tuimon's loss is not the one it prints"."""
    ours = {i: 9.0 - i / 10 for i in range(10)}
    read = Anatomy(ends_at="optimizer.step", steps=10, printed={"losses_by": {
        "d": [[i, 0.5 + i / 100] for i in range(10)], "g": [[i, 9.0 - i / 10] for i in range(10)]}})
    (check,) = checked(read, ours, {}).checks
    assert check.code == "losses_agree" and check.figures["name"] == "g"
    from tuimon.report.anatomy_text import check_text as _check

    assert _check(check) == "its printed G losses agree with tuimon's at 10 steps"


def test_the_reading_is_checked_against_the_printed_losses_and_times():
    ours = {i: 4.0 - i / 100 for i in range(20)}
    ms = {i: 10.0 for i in range(20)}
    read = Anatomy(ends_at="optimizer.step", steps=20, loss_sums={"4": 20},
                   optimizers=({"optimizer": "AdamW", "steps": 20, "lead": True},))

    def check(losses, times=None):
        printed = {"losses": [[k, v] for k, v in losses]} | ({"ms": times} if times else {})
        return [(p.code, p.figures) for p in checked(Anatomy(**{**read.__dict__, "printed": printed}),
                                                      ours, ms).checks]

    same = [(k, ours[k]) for k in range(0, 20, 5)]
    assert check(same)[0][0] == "losses_agree"
    shifted = [(k + 1, ours[k]) for k in range(0, 20, 5)]  # the script counts steps from 1
    assert check(shifted)[0] == ("losses_agree", {"pairs": 4, "offset": -1})
    (code, figures), = check([(k, ours[k] / 4) for k in range(0, 20, 5)])  # prints the mean of 4
    assert code == "losses_scaled" and figures["mean"] and figures["ratio"] == 0.25
    assert check([(k, 1.0 + k) for k in range(0, 20, 5)])[0][0] == "losses_differ"
    codes = dict(check(same, [[k, 10.4] for k in range(5)]))
    assert "times_agree" in codes
    codes = dict(check(same, [[k, 20.0] for k in range(5)]))
    assert codes["times_differ"]["ratio"] == 2.0


def test_the_loop_section_says_the_reading_of_a_wgan():
    evs = run_events("default-script", "default", "script", [5.0] * 40,
                     losses=[2.0 - i / 100 for i in range(40)])
    evs.insert(-2, events.make(events.ANATOMY, "default-script", steps=40, ends_at="optimizer.step",
                               optimizers=[
        {"optimizer": "Adam", "params": 1608, "steps": 8, "module": "Generator", "compiled": "tuimon",
         "beside": None, "lead": False, "every": 5.0},
        {"optimizer": "Adam", "params": 641, "steps": 40, "module": "Critic",
         "compiled": "double-backward", "beside": None, "lead": True, "every": 1.0}],
        backwards={"1": 32, "2": 8}, loss_sums={"1": 40}, outside={}, trainings=[], lead_changes=1))
    evs.insert(-1, events.make(events.PRINTED, "default-script",
                               losses=[[k, 2.0] for k in range(0, 40, 10)]))
    summary = summarize(evs)
    lines = [x.text for x in sections.document({}, summary, only=("loop",))["loop"].lines]
    assert lines[0] == ("step: one `Adam.step()` (Critic, 641 parameters) — 40 steps; 1 backward() "
                        "in 32 steps, 2 backward() in 8 steps")
    assert lines[1] == ("another optimizer: `Adam.step()` (Generator, 1,608 parameters) every 5 steps "
                        "(8 steps)")
    assert lines[2] == "loss: the backward() loss before each step()"
    assert "Critic left eager: a double backward" in lines[3]
    (check,) = summary.runs[0].anatomy.checks  # the printed losses were set beside tuimon's
    assert check.code == "losses_differ" and check.figures == {"pairs": 4, "agree": 1}


def test_alternating_steps_are_weighed_by_their_cycles_mean():
    """An actor stepped on every third step: 16.45 ms, then 5.45 ms twice. Their median (5.45)
    is no training step's; a cycle's mean step (9.1) is what the loop costs."""
    from tuimon.analysis.stats.cycles import cycle

    sac = [16.45 if i % 3 == 0 else 5.45 + 0.01 * (i % 5) for i in range(201)]
    assert cycle(sac) == 3
    ppo = [100.0 if i % 16 == 0 else 4.0 for i in range(320)]  # a rollout in one step of 16
    assert cycle(ppo) == 16
    import random

    rng = random.Random(0)
    assert cycle([5.0 * (1 + 0.3 * rng.random()) for _ in range(400)]) == 1  # noise: no cycle
    evs = run_events("eager-fp32", "eager", "fp32", sac)
    (r,) = summarize(evs).runs
    assert r.timing.cycle == 3 and abs(r.timing.median_ms - 9.12) < 0.05


def test_a_comparison_weighs_both_rows_by_the_same_cycles():
    """SAC's two variants (rerun of issue 40): eager's steps part from their median by more than
    UNEVEN, default's by less (8 %), so eager was weighed by its cycle means and default by its
    median, and the speedup divided one by the other (0.83× where like for like is 0.89×). A cycle
    one row finds weighs every row."""
    eager = [16.45 if i % 3 == 0 else 5.45 for i in range(201)]  # cycle mean 9.12, median 5.45
    default = [9.0 if i % 3 == 0 else 8.0 for i in range(201)]  # cycle mean 8.33, median 8: 4 %
    from tuimon.analysis.stats.cycles import cycle

    assert (cycle(eager), cycle(default)) == (3, 1)  # alone, each row would decide apart
    evs = run_events("eager-script", "eager", "script", eager)
    evs += [e for e in run_events("default-script", "default", "script", default)
            if e["type"] not in (events.SESSION_STARTED, events.SESSION_ENDED)]
    rows = {r.run: r for r in summarize(evs).runs}
    assert {r.timing.cycle for r in rows.values()} == {3}
    assert abs(rows["default-script"].timing.median_ms - 8.33) < 0.05  # its cycles' mean step


def test_a_printed_loss_within_two_percent_is_the_same_loss_not_a_scaled_one():
    """llama2.c prints its last micro-batch's loss (times 4), tuimon keeps the four's sum: within
    0.5 % of each other at every step; "0.996069× tuimon's" read as a warning (issue 40 rerun)."""
    ours = {i: 6.25 - i / 1000 for i in range(20)}
    read = Anatomy(ends_at="optimizer.step", steps=20,
                   printed={"losses": [[i, ours[i] * (1.004 if i % 2 else 0.996)] for i in range(20)]})
    (check,) = checked(read, ours, {}).checks
    assert check.code == "losses_near"


def test_a_cadence_is_read_over_each_optimizers_own_span():
    """SAC steps its actor twice on every other lead step, and a distillation script trains its
    models one after another: "every step (998 steps)" and "every 7 steps" were averages over
    the whole run (issue 40 rerun, N8). Each optimizer's cadence is over its own steps."""
    from tuimon.analysis.stats.anatomy import anatomy_of
    from tuimon.report.anatomy_text import others_text

    lead = Lead(lambda text, **f: None)
    emitter = Emitter(None, "r")
    said = []
    emitter.emit = lambda kind, **fields: said.append(fields)
    reading = Reading(emitter, lead)
    q, actor, later = (torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))]) for _ in range(3))
    for opt in (q, actor, later):
        reading.made(opt)
    reading.lead_changed(q, 0)
    for i in range(100):
        reading.stepped(q)
        if i % 2:
            reading.stepped(actor)
            reading.stepped(actor)
        if 60 <= i < 80:
            reading.stepped(later)
        reading.step_ended(i, 1, 1, None, False)
    del q  # the lead let go with its training, as a script's end does
    reading.say()
    a = anatomy_of({**said[-1], "type": "anatomy"}, Anatomy())
    assert a.lead is not None and a.lead["optimizer"] == "Adam"
    assert others_text(a) == [
        "another optimizer: `Adam.step()` (its module not found, 1 parameters) 2× every 2 steps (100 steps)",
        "another optimizer: `Adam.step()` (its module not found, 1 parameters) every step in steps 60–79 "
        "(20 steps)"]


def test_a_burst_of_load_is_no_cycle():
    """x-transformers' copy task on a loaded machine (issue 40 rerun, N13): its steps jumped from
    ~400 ms to ~800 ms for a stretch, which repeats at every short lag; read as 3-step cycles,
    the compiled row's 'mean step' made a 1.11x speedup read 0.75x."""
    import random

    from tuimon.analysis.stats.cycles import cycle

    rng = random.Random(1)
    steps = [(800.0 if 40 <= i < 70 else 400.0) * (1 + 0.05 * rng.random()) for i in range(120)]
    assert cycle(steps) == 1
    sac = [16.45 if i % 3 == 0 else 5.45 for i in range(120)]
    assert cycle(sac) == 3  # alternating steps still are


def test_a_module_whose_compile_failed_is_said_to_run_eager():
    """yunjey's LSTM language model: tuimon asked to compile RNNLM, Dynamo could not, and the
    loop's section said "RNNLM compiled by tuimon" (issue 40 rerun, N12)."""
    from dataclasses import replace

    from tuimon.analysis import RunStats
    from tuimon.analysis.stats.point import point
    from tuimon.report.anatomy_text import modules_text

    r = RunStats(run="default-script", mode="default", precision="script")
    r.anatomy = Anatomy(ends_at="optimizer.step", optimizers=({"optimizer": "Adam", "module": "RNNLM",
                                                               "compiled": "tuimon", "lead": True},))
    assert modules_text(r) == "RNNLM compiled by tuimon (the script compiles none)"
    r.compile = replace(r.compile, nothing_compiled=point("failed", failure={"reason": "LSTM"}))
    assert modules_text(r).endswith("but the compile failed: it ran eager")


def test_the_process_time_is_set_against_what_the_steps_account_for():
    """Issue 40: the time accounted for (start-up, steps, turns waited, the end) against the
    process's life; work in none of them (steps that do not hold the loop) is said, and doubts the
    row."""
    from tuimon.analysis.stats.anatomy import doubts
    from tuimon.report.anatomy_text import check_text as _check

    ms = {i: 100.0 for i in range(100)}  # 10 s of steps, from t=1005 to t=1015 (+ 3 s waited)
    clock = {"t": 1016.0, "seconds": 13.5, "paused_s": 3.0, "profile_s": 0.0,
             "exited_t": 1020.0, "life_s": 20.0}  # born at 1000: 5 s start-up, 5 s after
    read = Anatomy(ends_at="optimizer.step", steps=100, clock=clock)
    (p,) = checked(read, {}, ms, (1005.0, 1018.0)).checks
    assert p.code == "time_accounted" and p.figures["outside_s"] == 0.0 and p.figures["after_s"] == 2.0
    assert _check(p) == ("its process's 20.0 s: start-up 5.0 s, steps 10.0 s, waits for other "
                         "variants' turns 3.0 s, after its last step 2.0 s; 0 ms in none")
    # a loop whose steps hold a third of its work: 40 s of a 60 s life in none of them
    clock = {**clock, "exited_t": 1060.0, "life_s": 60.0}
    a = checked(replace(read, clock=clock), {}, ms, (1005.0, 1058.0))
    (p,) = a.checks
    assert p.code == "time_outside" and p.figures["outside_s"] == 40.0
    assert [d.code for d in doubts(a)] == ["time_outside"]


def test_the_session_weighs_its_rows_by_the_cycle_most_rows_found():
    """SAC under --until-known (issue 40, second rerun): 24 processes, most of them 2-step
    cycles, one noisy process passing a 60-step lag; the longest won and weighed every row."""
    from tuimon.analysis.stats.cycles import cycle, session_cycle

    assert session_cycle([2, 2, 1, 60, 2, 1]) == 2
    assert session_cycle([1, 1]) == 1 and session_cycle([4, 2]) == 2  # a tie: the shorter
    import random

    rng = random.Random(3)
    sac = [(16.0 if i % 2 == 0 else 5.0) * (1 + 0.3 * rng.random()) for i in range(600)]
    assert cycle(sac, hint=2) in (1, 2)  # the loop's own cycle, or none: never a long lag


def test_of_two_matching_printed_series_the_longest_is_named():
    """llama2.c prints an eval estimate ("step 20: train loss 6.2279") and every step's loss
    ("20 | loss 6.2503"): both near tuimon's; the 61 pairs, not the eval's 4, are the check."""
    ours = {i: 6.25 - i / 1000 for i in range(61)}
    read = Anatomy(ends_at="optimizer.step", steps=61, printed={"losses_by": {
        "train": [[i, ours[i] * 0.996] for i in (0, 20, 40, 60)],
        "": [[i, ours[i] * 1.003] for i in range(61)]}})
    (check,) = checked(read, ours, {}).checks
    assert check.code == "losses_near" and check.figures["pairs"] == 61 and "name" not in check.figures
