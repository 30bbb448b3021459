"""What a runner's exit says that its events did not (one process, not a job: control/job_runs.py
tells a job's end). A script's hooks say it ended by itself at its exit, but whether it ended
well only its exit code says, so their ``finished`` is held until the reap; a runner that died
without a word failed; a stop that needed a signal is still a stop."""

from __future__ import annotations

import signal
from pathlib import Path

from tuimon import events, failures
from tuimon.control.child import log_tail
from tuimon.control.runs import DONE, STOPPED, Run


def hold_script_end(r: Run, batch: list[dict]) -> list[dict]:
    """The batch without a script's own end (kept in ``r.script_end`` for ``told``)."""
    held = [e for e in batch if e["type"] == events.FINISHED and e.get("reason") == events.SCRIPT_ENDED]
    if not held:
        return batch
    r.script_end = held[-1]
    return [e for e in batch if e not in held]


def told(r: Run, rc: int, script: bool, log: Path) -> tuple[list[dict], str | None, dict | None]:
    """(the events its exit adds, its new state or None, a failure to count or None) for ``r``
    whose process exited with ``rc``; ``script``: a script run; ``log``: its log."""
    if r.script_end is not None and rc == 0:  # it ended by itself, and well
        return [r.script_end], DONE, None
    if not r.state.ended and script and not r.stop_asked:
        e = script_exit(r, rc, log)
        return [e], None, e
    if r.state.ended and rc < 0 and rc != -signal.SIGINT and not r.stop_asked and not r.escalation:
        text = (f"its process was killed by {failures.of_exit(rc)['signal']} as it exited, after "
                "it had finished: the steps it measured are all here (the log holds its last lines)")
        return [events.make(events.WARNING, r.id, text=text)], None, None
    if r.state.ended:
        return [], None, None
    how = f"killed by {signal.Signals(-rc).name}" if rc < 0 else f"exited with code {rc}"
    if r.stop_asked:  # asked to stop and killed (still building, or deaf): still a stop
        return [events.make(events.FINISHED, r.id, reason="stopped", forced=how)], STOPPED, None
    tail = log_tail(log)
    e = events.make(events.FAILED, r.id, stage="crash", error="ChildExited",
                    message=f"runner {how} without a result", returncode=rc,
                    traceback=tail, **failures.of_exit(rc, tail))
    return [e], None, e


def script_exit(r: Run, rc: int, log: Path) -> dict:
    """A script's end that its hooks could not tell: a non-zero exit code, a kill, or an
    error before its first step (a missing module, a bad argument): a build failure then."""
    how = f"was killed by {signal.Signals(-rc).name}" if rc < 0 else f"exited with code {rc}"
    tail = log_tail(log)
    last = next((x.strip() for x in reversed(tail.splitlines()) if x.strip()), "")
    stage = "step" if r.state.stepped else "build"
    when = "before its first step" if stage == "build" else "while training"
    message = f"the script {how} {when}" + (f": {last}" if last else "")
    return events.make(events.FAILED, r.id, stage=stage, error="ScriptExit", message=message[:500],
                       returncode=rc, traceback=tail, **failures.of_exit(rc, tail))
