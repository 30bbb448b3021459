"""The real runs of tests/unit/test_handover.py: the CLI in a child process, real scripts and compiles.
The pure tests of the same feature stay in tests/unit/test_handover.py."""

from __future__ import annotations

import sys

from conftest import SCRIPTS, TEST_RECIPES
from test_end_to_end import runs_of

from tuimon import events


def test_no_step_is_measured_while_another_variant_ends(tuimon, tmp_path):
    """Two variants of a script with 2 DataLoader workers whose end keeps two cores busy for
    1.5 s after tuimon ended it at --steps: joined by the script as it exits (after tuimon's
    atexit said it finished), or left running after it exited. The other variant takes no step
    from the first one's last step until the machine is quiet again."""
    done, work = tmp_path / "done", tmp_path / "work"
    done.mkdir()
    work.mkdir()
    # The helpers' end is written outside the script's directory (a write inside it would be
    # kept apart in the variant's own view of it: docs/scripts.md).
    proc, session = tuimon("run", "--headless", "--modes", "eager", "--set", "how=join,linger",
                           "--repeats", "1", "--steps", "24", "--turn", "0.3", "--interval", "0.25", "--",
                           sys.executable, str(SCRIPTS / "slow_exit.py"), "--how", "{how}",
                           "--exit-s", "1.5", "--done-dir", str(done), cwd=work)
    assert proc.returncode == 0, proc.stderr
    evs, by_run = runs_of(session)
    assert len(by_run) == 2
    for run, kinds in by_run.items():
        last = kinds[events.STEP][-1]["t"]
        if all(s["t"] <= last for other, theirs in by_run.items() if other != run
               for s in theirs[events.STEP]):
            continue  # it ended last: nothing stepped beside its end (its lingering helpers may
            # still be running, or be ended with the session, when tuimon returns)
        pid = kinds[events.RUN_STARTED][0]["pid"]
        # when its last helper process ended (time.time())
        quiet_at = {run: max(float(x) for x in (done / f"{pid}.done").read_text().split())}
        for other, theirs in by_run.items():
            if other == run:
                continue
            beside = [s for s in theirs[events.STEP]
                      if s["t"] > last and s["t"] - s["ms"] / 1000.0 < quiet_at[run]]
            assert not beside, (f"{other} stepped while {run} ended "
                                f"({last:.2f}..{quiet_at[run]:.2f}): {beside}")
    # Each still stepped to the end: the wait let the other go on once it was quiet.
    assert all(len(kinds[events.STEP]) == 24 for kinds in by_run.values())


def test_interleave_gives_no_turn_while_a_variant_still_builds(tuimon):
    """One variant builds for 2 s (its import, its model, its data): the other takes its first
    turn once both are ready."""
    proc, session = tuimon(str(TEST_RECIPES / "slow_steps.py"), "--headless", "--modes", "eager",
                           "--set", "build_s=0,2", "--set", "sleep_ms=5", "--steps", "20", "--repeats", "1",
                           "--no-probes")
    assert proc.returncode == 0, proc.stderr
    evs, by_run = runs_of(session)
    ready = max(next(e["t"] for e in kinds[events.PHASE] if e.get("turn"))
                for kinds in by_run.values())
    first = min(s["t"] - s["ms"] / 1000.0 for kinds in by_run.values() for s in kinds[events.STEP])
    assert first >= ready, f"a step began {ready - first:.2f} s before every variant was built"
