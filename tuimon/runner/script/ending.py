"""A script run's end, as its hooks see it (``run``: its ScriptSteps): the ``finished`` event at
the interpreter's exit (atexit) or a ``failed`` one for an exception the script did not catch
(sys.excepthook), through the step engine; and the no-step watch's question, whether the script
has stepped at all."""

from __future__ import annotations

import time

from tuimon import events, failures
from tuimon.runner.script.fixes import settle

# Where torch.compile's own code runs: a failure raised there is the compile's, not the script's.
COMPILER_FRAMES = ("torch/_dynamo/", "torch/_inductor/", "torch/_functorch/", "torch/_subclasses/")


def finished(run) -> None:
    """The interpreter is exiting (atexit): the steps, then why it ended."""
    engine = run.engine
    run.enabled = False
    if run.failed:
        engine.guard.restore()
        return
    settle(run.fixes)  # each fix nothing was said of: not applied, and why
    if run.boundaries:
        run.anatomy.say()  # the loop's reading with the whole run's counts
    engine.finish(run.reason or events.SCRIPT_ENDED,
                  asked=run.modes is not None and run.modes.asked())


def crashed(run, exc: BaseException, tb_text: str, where: str | None) -> None:
    """An exception the script did not catch (sys.excepthook)."""
    if isinstance(exc, KeyboardInterrupt):
        if run.reason is None:
            run.reason = "stopped"  # Ctrl-C's SIGINT (the supervisor's escalation)
        return
    if run.reason is not None and not run.enabled:
        after_stop(run, exc, where)  # tuimon ended its training: what it ran after is not a failure
        return
    # Once training showed (a batch, a backward(), a compile), a failure is a step's: a compiled
    # variant that torch.compile breaks fails alone, the others run on.
    stage = "step" if run.started else "build"
    compiled = run.modes is not None and run.modes.asked() and any(
        part in tb_text for part in COMPILER_FRAMES)
    run.enabled, run.failed = False, True
    run.engine.failed(exc, stage, failures.plain(tb_text), where,
                      **({"in_compile": True} if compiled else {}))


def after_stop(run, exc: BaseException, where: str | None) -> None:
    """tuimon stopped the script (--steps, --duration, a stop) and its own code after the
    training loop then raised: word_language_model loads the checkpoint it saves at an
    epoch's end, which a run stopped before that never wrote. The measured steps stand and
    the run is not failed (issue 33.8); a note says what was raised, and why."""
    text = failures.plain(str(exc)).strip().splitlines()
    what = f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__
    at = f" at {where}" if where else ""
    missing = isinstance(exc, FileNotFoundError)
    why = ("it was stopped before it wrote the file it reads there" if missing else
           "that code ran on a training tuimon had cut short")
    run.emitter.emit_now(events.WARNING, note=True, after_stop=what, text=(
        f"after tuimon stopped it ({run.reason}, at step {run.i}), the script's own code "
        f"raised {what}{at}: {why}; its measured steps stand (give it more --steps, or "
        "--duration, to reach that point)"))


def no_step_yet(run, seconds: float) -> bool | None:
    """True: no step ``seconds`` after start (or after its first turn came), compiles left
    out; None: not yet known (waiting for its first turn, compiling, or not that long). A
    first ``optimizer.step()`` still compiling is no missing step."""
    if not run.enabled or run.boundaries:
        return False
    if run.booted_at is None or run.watch.active or run.stepping_depth:
        return None  # waiting for its turn, compiling, or inside a (long) optimizer step()
    compiling = run.watch.total_s - run.compiled_at_boot
    if time.monotonic() - run.booted_at - compiling < seconds:
        return None
    return True
