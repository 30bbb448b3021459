"""A variant's torchrun job as the supervisor steers it: torchrun's own process (the elastic agent,
spawned like any runner: its event pipe's end of file is the job's end) and one connection per
rank (control/rank_hub.py).

Pause, a turn's end and a stop reach every rank *at the same step*. Under DDP every step holds a
collective, so a rank that stops or pauses one step before the others leaves them waiting inside
that collective. A job is therefore never told "pause" but "pause-at S": S a few tenths of a
second of steps ahead of the last step any rank reported (``estimate``), so that every rank has
read the line (ranks read their channel every 50 ms) before it gets there. Once every rank has
paused at the same step the job is paused (a user's pause), waiting for its turn, or stopped:
a stop is a pause first, then ``stop-at A REASON`` where every rank waits at A, so each script's
``except KeyboardInterrupt`` / ``finally`` runs at the same step on every rank.

When the estimate was short (a rank had passed S before it read the line, or the steps sped up
after a compile), the ranks pause at different steps, or some pause while the others wait inside
the next step's collective for them: the job *catches up*: the ranks behind step to the
furthest pause (or one step on, ``CATCH_UP_S`` later), and the steps in between are named in a
``control`` event (action ``catch_up``) so the statistics keep them apart (a rank that waited
for a paused one measured the pause). No collective, store or GPU call is added anywhere: all of
this is the supervisor's lines and the ranks' own step counts.

Pure bookkeeping plus sends: what each rank said is the supervisor's reading of the recorded
events (sessiondir/run_state.py: ``state``); the supervisor (control/job_runs.py) tells it of each
rank event on its loop thread, for the pauses it steers, and acts on what ``check`` returns.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import time
from dataclasses import dataclass, field

import psutil

from tuimon import events
from tuimon.control.child import Child
from tuimon.control.rank_hub import RankConn
from tuimon.sessiondir.run_state import RankState, RunState

LEAD_S = 0.3  # how far ahead a scheduled pause lands: ranks read their channel every 50 ms
CATCH_UP_S = 1.0  # some ranks paused, the others silent this long (and 4 steps): they wait for them
DEFAULT_STEP_S = 0.05  # the step time assumed before any step was seen


@dataclass
class RankLink:
    """What the supervisor holds of one rank: its connection and the pause it steers (what the
    rank said is its ``RankState``)."""

    rank: int
    said: RankState  # what it said: its record in the job's state once it said anything
    conn: RankConn | None = None
    hello: dict = field(default_factory=dict)
    gone: bool = False  # its connection closed
    paused_at: int | None = None  # steps done when it paused (None again once told to resume)

    @property
    def live(self) -> bool:
        return not (self.said.ended or self.gone)


class JobChild(Child):
    """The agent process (``Child``) plus its ranks. ``send`` takes the commands a single runner
    takes (pause, resume, stop, profile) and turns them into lines every rank acts on alike."""

    def __init__(self, run, proc, control_fd, *, state: RunState, local_world: int | None,
                 turn_steps: int | None, turn_cap: int | None, turns: bool,
                 steps: int | None = None) -> None:
        super().__init__(run, proc, control_fd)
        self.steps = steps  # --steps: every rank stops there by itself (no turn ends at or past it)
        self.state = state  # what the job's recorded events say, its ranks' included
        self.ranks: dict[int, RankLink] = {}
        self.local_world = local_world  # ranks expected on this node (None: from their hello)
        self.turn_steps, self.turn_cap = turn_steps, turn_cap
        # What the job is heading for: None (stepping), "pause", "turn" or "stop"; the start
        # of an interleaved session is a turn at step 0 (every rank waits there).
        self.intent: str | None = "turn" if turns else None
        self.target: int | None = 0 if turns else None
        self.stop_reason = "stopped"
        self.settled: int | None = None  # every rank paused here (steps done)
        self.turn_target: int | None = None  # the step the current turn ends at (step turns)
        self.turn_clock: float | None = None  # monotonic: when the turn (or its stepping) began
        self.ms_ema: float | None = None
        self.first_paused: float | None = None  # monotonic: a pending pause's first rank paused
        self.stop_sent = False
        self.from_turn = False  # paused by the user while it waited for its turn

    # ---- ranks -------------------------------------------------------------------------------
    def rank(self, rank: int) -> RankLink:
        link = self.ranks.get(rank)
        if link is None:
            link = self.ranks[rank] = RankLink(rank, RankState(rank))
        link.said = self.state.ranks.get(rank, link.said)
        return link

    def live_ranks(self) -> list[RankLink]:
        return [rs for rs in self.ranks.values() if rs.live]

    def expected(self) -> int:
        return self.local_world or max((rs.hello.get("local_world_size") or 0
                                        for rs in self.ranks.values()), default=0) or len(self.ranks)

    def hello(self, rank: int, conn: RankConn, hello: dict) -> None:
        rs = self.rank(rank)
        rs.conn, rs.hello = conn, hello
        if self.local_world is None and hello.get("local_world_size"):
            self.local_world = int(hello["local_world_size"])
        if self.intent is not None and self.target:  # a pause under way: this rank's too
            conn.send(self._pause_line(self.target, self.intent == "turn"))

    def rank_pids(self) -> dict[int, int]:
        """The pids of the ranks still connected (one that said it ended may still be exiting)."""
        return {r: rs.hello["pid"] for r, rs in sorted(list(self.ranks.items()))
                if not rs.gone and rs.hello.get("pid")}

    def groups(self) -> list[int]:
        """torchrun's process group and each rank's own (torchrun starts every worker in its own
        session): a job has exited once none of them holds a process."""
        return [self.proc.pid, *sorted({rs.hello["pid"] for rs in self.ranks.values()
                                        if rs.hello.get("pid")})]

    # ---- what the ranks say ----------------------------------------------------------------------
    def event(self, rank: int, e: dict) -> None:
        """A rank's event, once recorded (and folded into ``state``): the pause it steers, and the
        job's step time, for how far ahead a pause lands."""
        rs, kind = self.rank(rank), e["type"]
        if kind == events.STEP:
            if not e.get("compile_ms") and e.get("phase") == "steady":
                ms = e.get("ms") or 0.0
                self.ms_ema = ms if self.ms_ema is None else 0.8 * self.ms_ema + 0.2 * ms
        elif kind == events.PHASE:
            if e.get("phase") == "paused":
                rs.paused_at = e.get("at", rs.said.last_i + 1)
                if self.first_paused is None:
                    self.first_paused = time.monotonic()
            else:
                rs.paused_at = None

    def gone(self, rank: int) -> None:
        self.rank(rank).gone = True

    # ---- commands ------------------------------------------------------------------------------
    def send(self, command: str) -> bool:
        if command == "pause":
            return self.schedule("pause")
        if command == "stop":
            return self.schedule("stop")
        if command == "resume":
            return self.resume()
        if command.startswith("profile"):  # one capture, on the job's first rank
            lead = min((rs for rs in self.live_ranks() if rs.conn), key=lambda rs: rs.rank,
                       default=None)
            return lead is not None and lead.conn.send(command)
        return self._broadcast([command])

    def schedule(self, intent: str, reason: str = "stopped") -> bool:
        """Head every rank for a pause ("pause", "turn") or a stop ("stop", with ``reason``)."""
        if intent == "stop":
            self.stop_reason = reason
            if self.settled is not None:  # every rank waits at the same step: stop there
                self.intent = "stop"
                return self._stop_now()
            if self.intent is not None:  # a pause under way: it ends in the stop
                self.intent = "stop"
                return True
        elif intent == "pause" and self.intent == "turn":
            # The user's pause over a turn's end: waiting for its turn already (it stays out of
            # the rotation until resumed), or heading there (the same step, as a pause).
            self.intent, self.from_turn = "pause", self.settled is not None
            return self.from_turn or self._broadcast([self._pause_line(self.target, False)])
        elif self.settled is not None or self.intent is not None:
            return True  # paused or pausing already
        self.intent, self.target, self.first_paused = intent, self.estimate(), None
        return self._broadcast([self._pause_line(self.target, intent == "turn")])

    def resume(self) -> bool:
        """From a settled pause: the next turn (its end sent along for step-sized turns), or a
        user's resume (the turn's end sent again: the pause replaced it)."""
        if self.settled is not None and self.intent == "pause" and self.from_turn:
            self.intent, self.from_turn = "turn", False  # back to waiting for its turn
            return True
        if self.settled is None:
            if self.intent != "pause":
                return False
            # A pause called off before every rank got there: those paused resume, the others
            # drop the step they were heading for (runner/engine.py _obey).
            self.intent = self.target = self.first_paused = None
            return self._broadcast(["resume"])
        at, lines = self.settled, []
        if self.intent == "turn" and (self.turn_steps or self.turn_cap):
            self.turn_target = at + (self.turn_steps or self.turn_cap)
        if self.turn_target is not None and at < self.turn_target < (self.steps or math.inf):
            lines.append(self._pause_line(self.turn_target, True))
        if self.intent == "turn":
            self.turn_clock = time.monotonic()
        self.intent = self.target = self.settled = self.first_paused = None
        for rs in self.live_ranks():
            rs.paused_at = None
        return self._broadcast([*lines, "resume"])

    def check(self, now: float) -> list[tuple]:
        """What the job's ranks amount to now: ("settled", at, intent) once every rank paused at
        one step (a stop is sent then), ("catch_up", first, last) when they did not."""
        live = self.live_ranks()
        if self.settled is not None or not live:
            return []
        paused = [rs for rs in live if rs.paused_at is not None]
        if not paused:
            return []
        if self.intent is None:  # a turn's end sent at its start (turns sized in steps)
            if self.turn_target is None or not all(rs.said.turn for rs in paused):
                return []
            self.intent, self.target = "turn", self.turn_target
        ats = sorted({rs.paused_at for rs in paused})
        if len(paused) == len(live) and len(live) >= self.expected():
            if len(ats) == 1:
                self.settled = ats[0]
                if self.intent == "stop":
                    self._stop_now()
                return [("settled", ats[0], self.intent)]
            return self._catch_up([rs for rs in paused if rs.paused_at < ats[-1]], ats[0], ats[-1])
        # Some paused, the others silent: inside the next step, waiting there for the paused ones
        # (not at the start, where every rank waits at step 0; not while one compiles).
        silent = [rs for rs in live if rs.paused_at is None]
        step_s = (self.ms_ema or DEFAULT_STEP_S * 1000) / 1000.0
        if (self.target and self.first_paused is not None and len(live) >= self.expected()
                and all(rs.said.started and not rs.said.compiling for rs in silent)
                and now - self.first_paused >= max(CATCH_UP_S, 4 * step_s)):
            return self._catch_up(paused, ats[-1], ats[-1] + 1)
        return []

    def _catch_up(self, behind: list[RankLink], first: int, last: int) -> list[tuple]:
        turn = self.intent == "turn"
        for rs in behind:
            rs.paused_at = None
            if rs.conn is not None:
                rs.conn.send(self._pause_line(last, turn))
                rs.conn.send("resume")
        self.target, self.first_paused = last, None
        return [("catch_up", first, last)]

    def _stop_now(self) -> bool:
        if self.stop_sent:
            return True
        self.stop_sent = True
        return self._broadcast([f"stop-at {self.settled} {self.stop_reason}"])

    def estimate(self) -> int:
        """Steps done by every rank a little (LEAD_S) from now: the furthest step reported,
        plus the steps that fit in the time since it ended and the lead."""
        live = self.live_ranks() or list(self.ranks.values())
        last = max((rs.said.last_i for rs in live), default=-1)
        ends = [rs.said.last_t for rs in live if rs.said.last_t is not None and rs.said.last_i == last]
        behind = max(0.0, time.time() - max(ends)) if ends else 0.0
        step_s = max((self.ms_ema or DEFAULT_STEP_S * 1000) / 1000.0, 1e-4)
        return last + 1 + math.ceil((behind + LEAD_S) / step_s) + 1

    def lead_time(self) -> float:
        """Seconds until a scheduled pause lands, with room for a catch-up (stop deadlines)."""
        if self.target is None:
            return 0.0
        last = max((rs.said.last_i for rs in self.live_ranks()), default=-1)
        step_s = (self.ms_ema or DEFAULT_STEP_S * 1000) / 1000.0
        return max(0, self.target - last) * step_s + LEAD_S + CATCH_UP_S

    def _pause_line(self, at: int, turn: bool) -> str:
        return f"pause-at {at}" + (" turn" if turn else "")

    def _broadcast(self, lines: list[str]) -> bool:
        sent = False
        for rs in self.live_ranks():
            if rs.conn is not None:
                for line in lines:
                    sent = rs.conn.send(line) or sent
        return sent or not self.live_ranks()

    # ---- signals -------------------------------------------------------------------------------
    def signal(self, sig: int) -> None:
        """SIGUSR1 (dump) to the ranks only (torchrun dies of it); SIGINT to torchrun, which
        hands it to its workers as it tears them down; SIGKILL to torchrun's group and to each
        worker's (torchrun starts every worker in its own session), found before torchrun dies."""
        pids = set(self.rank_pids().values())
        if sig == signal.SIGKILL:  # workers that have not said hello yet (still importing torch)
            with contextlib.suppress(psutil.Error):
                pids |= {c.pid for c in psutil.Process(self.proc.pid).children()}
        if sig != signal.SIGUSR1:
            super().signal(sig)
        if sig == signal.SIGINT:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if sig == signal.SIGKILL:
                    os.killpg(pid, sig)
                else:
                    os.kill(pid, sig)

    # ---- words -----------------------------------------------------------------------------------
    def hang_text(self) -> str:
        """Which rank the others wait for: the one whose last step is the furthest behind."""
        live = [rs.said for rs in self.live_ranks() if rs.said.started]
        if len(live) < 2:
            return ""
        lowest = min(rs.last_i for rs in live)
        behind = [rs.rank for rs in live if rs.last_i == lowest]
        if len(behind) == len(live):
            return f"; every rank's last step is {lowest}"
        ahead = max(rs.last_i for rs in live)
        who = ", ".join(str(r) for r in behind)
        return (f"; rank{'s' if len(behind) > 1 else ''} {who} behind (last step {lowest}, the "
                f"others at {ahead}: they wait for {'them' if len(behind) > 1 else 'it'} in a "
                "collective?)")
