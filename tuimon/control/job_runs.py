"""Torchrun jobs in a session: ``Jobs``, which the supervisor owns, on its loop thread.

A run is a job when its command is torchrun (``tuimon run -- torchrun ...``, or an ``accelerate
launch`` of several processes, which runs torch's launcher in its own process) or its recipe runs
as N ranks (``--nproc N``): the supervisor spawns torchrun, whose workers connect to the
session's rank socket (control/rank_hub.py); their events are recorded with their ``rank`` and
steer the run's state through its ``JobChild`` (control/job_child.py): the job is paused, waiting for
its turn or stopped once every rank is, and its end is told at torchrun's exit: done with the
ranks' reason, or failed with the first failing rank's cause and what became of the others
(torchrun tears the job down when one rank fails).
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from tuimon import envvars, events
from tuimon.control.child import log_tail
from tuimon.control.job_child import JobChild
from tuimon.control.rank_hub import RankHub
from tuimon.control.runs import DONE, PAUSED, RUNNING, STOPPED, Plan, Run, RunTable
from tuimon.control.schedule import Schedule
from tuimon.control.stopping import Stopper
from tuimon.settings import RunSettings, Turns
from tuimon.torchrun import job_command

RANK = "rank"  # the inbox's kind for the rank socket's news
# Every rank here has ended and torchrun is still running this long after: a job over several
# nodes waits at torch's exit barrier for the other nodes' launchers (up to its 300 s).
EXIT_WAIT_S = 20.0
# A rank's finished reasons that are tuimon's stop: its length, or tuimon's stop line / SIGINT
# ("stopped": a job's ranks are stopped at one step; a user's own stop never warns)
TUIMON_STOPS = ("steps", "duration", "stopped")


@dataclass
class _Job:
    """What the supervisor keeps of one job beside its ``JobChild``."""

    port_offset: int  # its rendezvous port's offset (torchrun.py)
    active_s: float = 0.0  # seconds it stepped (its --duration)
    ranks_done_at: float | None = None  # when every rank here had ended and exited
    exit_wait_said: bool = False  # ... and that torchrun still waits at its exit, said


class Jobs:
    """The session's torchrun jobs: spawned (``spawn``), steered by their ranks' news (``news``)
    and every tick (``tick``), ended at torchrun's exit (``end``). ``failed(r, e)``: a run
    failed; ``news``: where the rank socket's news go (the supervisor's inbox, tagged ``RANK``);
    ``first``: the plan's first runs, whose ports follow their variants' order."""

    def __init__(self, plan: Plan, table: RunTable, record, schedule: Schedule, stopper: Stopper,
                 *, failed: Callable[[Run, dict], None], news: Callable, log_path: Callable,
                 first: list[str]) -> None:
        self.plan, self.table, self.record = plan, table, record
        self.schedule, self.stopper, self.failed = schedule, stopper, failed
        self._news, self._log_path, self._first = news, log_path, first
        self.on = plan.program.is_job
        self._hub: RankHub | None = None
        self._last_tick: float | None = None
        self._jobs: dict[str, _Job] = {}

    # ---- starting ----------------------------------------------------------------------------
    def spawn(self, r: Run, settings: RunSettings, **spawn) -> JobChild:
        if self._hub is None:
            self._hub = RankHub(self._news)
        plan = self.plan
        interleave = plan.schedule == "interleave"
        port = self._port_offset(r)
        self._jobs[r.id] = _Job(port)
        job = {"path": self._hub.path, "token": self._hub.token(r.id)}
        local_world = settings.program.nproc
        if settings.program.is_script:
            command = list(settings.program.command)
            launch = job_command(command)  # torchrun's, or accelerate launch's of several
            settings = replace(settings, program=replace(
                settings.program, command=tuple(launch.with_port_offset(port))))
            local_world = launch.nproc
            if (note := launch.port_text(port)) is not None:
                self.record([events.make(events.WARNING, r.id, text=note, note=True)])
        # Turns and --duration are the supervisor's (every rank at the same step).
        settings = replace(settings, length=replace(settings.length, duration=None),
                           turns=Turns(turn_first=interleave))
        cap = None
        steps = self._length(r)[0]
        if interleave and not plan.turn_steps and steps:
            cap = max(1, -(-steps // 4))  # as runner/turns.py: 4 turns at least
        return JobChild.spawn(
            settings, job=job, state=r.state, local_world=local_world,
            turn_steps=plan.turn_steps if interleave else None, turn_cap=cap, turns=interleave,
            steps=steps, **spawn)

    def _port_offset(self, r: Run) -> int:
        """The plan's variants: their place in it (every node alike); a run added later: the
        lowest offset no live job holds."""
        if r.id in self._first:
            return self.plan.variants.index(r.variant)
        held = {self._jobs[x].port_offset for x in self.table.live if x in self._jobs and x != r.id}
        return next(k for k in range(len(held) + 1) if k not in held)

    def _length(self, r: Run) -> tuple[int | None, float | None]:
        """The run's (steps, duration): round 1 the whole length, rounds 2..K a K-th of it
        (tuimon/lengths.py)."""
        return replace(self.plan.settings.length, round=r.replicate).this_process()

    # ---- the rank socket's news ------------------------------------------------------------------
    def news(self, kind: str, run: str, rank: int, *rest) -> None:
        r = self.table.runs.get(run)
        job = r.child if r is not None and isinstance(r.child, JobChild) else None
        if job is None:
            if kind == "hello":
                rest[1].sock.close()
            return
        if kind == "hello":
            job.hello(rank, rest[1], rest[0])
        elif kind == "events":
            batch = rest[0]
            for e in batch:
                e["run"], e["rank"] = run, rank  # the supervisor decides who said it
            self.record(batch)  # each one noted (``note``) once folded into the run's state
        elif kind == "eof":
            rs = job.rank(rank)
            job.gone(rank)
            if not rs.said.ended:  # torchrun ended it (another rank failed), or it died
                self.record([events.make(events.RUN_EXITED, run, rank=rank, said=False)])
            elif (all(x.said.ended and x.gone for x in job.ranks.values())
                  and len(job.ranks) >= job.expected()):
                self._jobs[run].ranks_done_at = time.monotonic()  # every rank ended, gone
        self._check_job(r, job)

    def note(self, r: Run, e: dict) -> None:
        """A rank's event, recorded and folded into the run's state (the supervisor keeps its
        clocks): what it changes in the job's pauses, its state and its stop."""
        job = r.child
        if not isinstance(job, JobChild):
            return
        job.event(e["rank"], e)
        kind, now = e["type"], time.monotonic()
        if kind == events.PHASE and e.get("phase") != "paused" and self.table.state(r.id) == PAUSED:
            self.table.set_state(r.id, RUNNING)  # resumed
            r.last_step = r.stepping_since = now
        elif kind == events.FINISHED and r.deadline is not None and not job.live_ranks():
            # Every rank said it stopped: torchrun and its workers take a while to exit (a
            # process group to destroy, compile workers to join); no SIGINT meanwhile.
            r.deadline = max(r.deadline, now + self.plan.stop_grace_s)
        elif kind == events.FAILED:
            self.failed(r, e)  # a build failure: the same script fails alike in every variant

    def _check_job(self, r: Run, job: JobChild) -> None:
        state = self.table.state(r.id)
        if job.settled is not None and not r.state.ended:  # a pause or resume over a turn's wait
            if job.intent == "pause" and state != PAUSED:
                self.table.set_state(r.id, PAUSED)
                r.waiting_turn = False
            elif job.intent == "turn" and state == PAUSED:
                self.table.set_state(r.id, RUNNING)
                r.waiting_turn = True
        for outcome in job.check(time.monotonic()):
            if outcome[0] == "catch_up":
                self.record([events.make(events.CONTROL, r.id, action="catch_up",
                                         first=outcome[1], last=outcome[2])])
            elif outcome[2] == "turn":
                r.waiting_turn = True
                self.schedule.over(r.id)
            elif outcome[2] == "pause":
                self.table.set_state(r.id, PAUSED)

    def tick(self, now: float) -> None:
        """Every loop tick: a job's turn ends after --turn seconds of stepping (compiles aside);
        --duration stops it (the stepping time, pauses and turn waits aside); catch-ups due."""
        dt, self._last_tick = now - (self._last_tick or now), now
        plan = self.plan
        for r in list(self.table.live.values()):
            job = r.child
            if not isinstance(job, JobChild) or r.state.ended:
                continue
            mine = self._jobs[r.id]
            stepping = (r.state.started and not r.waiting_turn and job.settled is None
                        and self.table.state(r.id) != PAUSED
                        and (plan.schedule != "interleave" or self.schedule.holder == r.id))
            if stepping:
                mine.active_s += dt
            if (stepping and plan.schedule == "interleave" and not plan.turn_steps
                    and job.intent is None and not r.state.compiling and job.turn_clock is not None
                    and now - job.turn_clock >= plan.turn_s):
                job.schedule("turn")
            duration = self._length(r)[1]
            if (duration is not None and mine.active_s >= duration and not r.stop_asked
                    and r.deadline is None):
                job.schedule("stop", "duration")
                r.deadline = now + plan.stop_line_s + job.lead_time()
            self._check_job(r, job)
            self._exit_wait(r, job, now)

    def _exit_wait(self, r: Run, job: JobChild, now: float) -> None:
        """Every rank here ended and its process exited ``EXIT_WAIT_S`` ago, and torchrun has not:
        over several nodes it waits at its exit barrier for the other nodes' launchers (up to
        torch's 300 s; a node whose rank died at its exit never comes). Nothing is left to
        measure or save here, so tuimon ends the wait (SIGINT, as a stop) and says so."""
        mine = self._jobs[r.id]
        if mine.ranks_done_at is None or mine.exit_wait_said or r.stop_asked:
            return  # (a stop asked for has its own deadlines: control/stopping.py)
        if now - mine.ranks_done_at < float(os.environ.get(envvars.EXIT_WAIT_S) or EXIT_WAIT_S):
            return
        mine.exit_wait_said = True
        world = max((rs.hello.get("world_size") or 0 for rs in job.ranks.values()), default=0)
        where = ("waited for the other nodes' launchers at its exit barrier (a node whose rank "
                 "failed at its exit never arrives)" if world > job.expected() else "had not exited")
        self.record([events.make(events.WARNING, r.id, note=True, text=(
            f"every rank here ended {now - mine.ranks_done_at:.0f} s ago and torchrun still {where}: "
            "tuimon ended it (every step was measured)"))])
        if not r.escalation:
            self.stopper.escalate_run(r)

    def rank_pids(self) -> dict[str, dict[int, int]]:
        """Run -> {rank: pid} of the live jobs' ranks (read by the sampler's thread)."""
        return {run: r.child.rank_pids() for run, r in list(self.table.live.items())
                if isinstance(r.child, JobChild)}

    def close(self) -> None:
        if self._hub is not None:
            self._hub.close()

    # ---- the end ---------------------------------------------------------------------------------
    def end(self, r: Run, rc: int) -> list[dict]:
        """torchrun has exited: the job's own finished or failed event (no rank)."""
        job: JobChild = r.child
        ranks = job.ranks
        said = [rs.said for rs in ranks.values()]
        failures = sorted((rs.end for rs in said if rs.end and rs.status == "failed"), key=lambda e: e["t"])
        tail = log_tail(self._log_path(r.id), 25)
        if failures:
            first = failures[0]
            others = _fate(ranks, first["rank"])
            fields = {k: first[k] for k in ("stage", "error", "message", "traceback", "where", "kind",
                                            "signal", "tried_bytes") if k in first}
            what = first.get("what") or f"{first.get('error')}: {first.get('message')}"
            fields["what"] = f"rank {first['rank']}: {what}"
            return self._job_failed(r, failed_rank=first["rank"], ranks_fate=others, returncode=rc,
                                    **fields)
        if not any(rs.started for rs in said) and rc != 0 and not r.stop_asked:
            last = next((x.strip() for x in reversed(tail.splitlines()) if x.strip()), "")
            return self._job_failed(
                r, stage="build", error="ScriptExit", returncode=rc, traceback=tail, kind="exit",
                message=(f"torchrun exited with code {rc} before any rank started"
                         + (f": {last}" if last else ""))[:500])
        silent = [rs.rank for rs in said if not rs.ended]
        if rc != 0 and not r.stop_asked and (silent or not ranks):
            rank, code = _root_cause(tail)
            who = f"rank {rank}" if rank is not None else "a rank"
            how = f"exited with code {code}" if code is not None else f"torchrun exited with code {rc}"
            return self._job_failed(
                r, stage="crash" if r.state.stepped else "build", error="RankExited", returncode=rc,
                kind="exit", traceback=tail, failed_rank=rank, ranks_fate=_fate(ranks, rank),
                message=f"{who} {how} without a result", what=f"{who} {how} without a result")
        reasons = [rs.end["reason"] for rs in said if rs.end and rs.end.get("reason")]
        reason = "stopped" if r.stop_asked or "stopped" in reasons else (
            max(set(reasons), key=reasons.count) if reasons else "stopped")
        if reason == events.SCRIPT_ENDED and rc != 0:
            reason = "stopped"
        self.table.set_state(r.id, STOPPED if reason == "stopped" else DONE)
        ends = [rs.end for rs in said if rs.end and rs.status != "failed"]
        figures = {k: max(e[k] for e in ends if e.get(k) is not None)
                   for k in ("seconds", "paused_s", "compiles", "compile_s")
                   if any(e.get(k) is not None for e in ends)}
        out = [events.make(events.FINISHED, r.id, reason=reason, returncode=rc, ranks=len(ranks),
                           ranks_fate=_fate(ranks, None), **figures)]
        if rc != 0 and not r.stop_asked and (text := _bad_exit(tail, ranks)):
            out.append(events.make(events.WARNING, r.id, text=f"{text}; torchrun exited with code {rc}"))
        return out

    def _job_failed(self, r: Run, **fields) -> list[dict]:
        e = events.make(events.FAILED, r.id, **fields)
        self.failed(r, e)
        return [e]


def _bad_exit(tail: str, ranks: dict | None = None) -> str | None:
    """After every rank had finished: the rank whose own exit failed, from torchrun's report
    (a signal other than tuimon's SIGINT, or a non-zero code), in words; None if none. A rank
    that tuimon stopped (--steps, --duration) by a KeyboardInterrupt its script did not catch
    exits with 1, not by SIGINT (Python does so when an excepthook, tuimon's, handled it)."""
    rank, code = _root_cause(tail)
    if code is None or code in (0, -signal.SIGINT):
        return None
    said = ranks[rank].said.end if ranks and rank in ranks else None
    if code == 1 and said and said.get("reason") in TUIMON_STOPS:
        return None
    try:
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
    except ValueError:
        how = f"was killed by signal {-code}"
    who = f"rank {rank}" if rank is not None else "a rank"
    return (f"{who} {how} as its process exited, after it had finished: the steps it measured "
            "are all here (the log holds its last lines)")


def _fate(ranks: dict, failed: int | None) -> str:
    """What became of the ranks other than ``failed``, in one line."""
    groups: dict[str, list[int]] = {}
    for rs in sorted((link.said for link in ranks.values()), key=lambda rs: rs.rank):
        if rs.rank == failed:
            continue
        if rs.status == "failed" and rs.end:
            error = f"{rs.end.get('error')}: {rs.end.get('message') or ''}"
            what = f"failed after it ({error[:80].rstrip()})" if failed is not None else "failed"
        elif rs.ended:
            reason = rs.end.get("reason") if rs.end else None
            what = f"ended ({reason})" if reason else "ended"
        else:
            what = "ended by torchrun" if failed is not None else "ended without a word"
        groups.setdefault(what, []).append(rs.rank)
    return "; ".join(f"rank{'s' if len(v) > 1 else ''} {', '.join(map(str, v))} {k}"
                     for k, v in groups.items())


_ROOT = re.compile(r"Root Cause.*?rank\s*:\s*(\d+).*?exitcode\s*:\s*(-?\d+)", re.S)


def _root_cause(tail: str) -> tuple[int | None, int | None]:
    """torchrun's own report of the first failed worker: (rank, exit code)."""
    m = _ROOT.search(tail)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)
