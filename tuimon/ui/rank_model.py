"""What the TUI shows of a torchrun job's ranks, folded from their events (no Textual here).

Each rank keeps its state, step count, a short series of its step times and losses (for the
rank view's plots), its compile status and its latest probe figures. The job's panel state is
read from its ranks (``job_state``) until the job's own end event says more. Statistics (each
rank's medians, skew, stragglers, divergence) come from the collector's summary, never from
here.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from tuimon import events
from tuimon.analysis import made_graph

RANK_SERIES = 120  # points per rank: a rank row's plot is a few dozen columns wide


@dataclass
class RankLive:
    rank: int
    state: str = "building"  # building, compiling, warmup, steady, paused, done, stopped, failed, killed
    turn: bool = False  # paused for the interleaved schedule's turn, not by the user
    host: str | None = None
    local_rank: int | None = None
    device: str | None = None
    steps: int = 0
    step_ms: deque = field(default_factory=lambda: deque(maxlen=RANK_SERIES))
    loss: deque = field(default_factory=lambda: deque(maxlen=RANK_SERIES))
    compiles: int = 0
    recompiles: int = 0
    graph_breaks: int = 0
    compile_id: str | None = None
    error: str | None = None
    sample: dict | None = None  # its own probe figures: cpu_percent, rss, gpus, sm_util, gpu_mem

    @property
    def active(self) -> bool:
        return self.state not in ("done", "stopped", "failed", "killed")


def rank_event(ranks: dict[int, RankLive], e: dict) -> RankLive:
    """Fold one rank event into its rank's row."""
    rank = ranks.get(e["rank"])
    if rank is None:
        rank = ranks[e["rank"]] = RankLive(e["rank"])
    kind = e["type"]
    if kind == events.STEP:
        rank.steps = e["i"] + 1
        if e.get("phase") == "steady" and not e.get("compile_ms") and not e.get("gap"):
            rank.step_ms.append(e["ms"])
        if e.get("loss") is not None:
            rank.loss.append(e["loss"])
        if rank.state not in ("paused",):
            rank.state = e.get("phase", rank.state)
    elif kind == events.PHASE:
        rank.state, rank.turn = e["phase"], bool(e.get("turn"))
        rank.compile_id = e.get("compile_id") if e["phase"] == "compiling" else None
    elif kind == events.RUN_STARTED:
        rank.host, rank.local_rank = e.get("host"), e.get("local_rank")
        rank.device = e.get("device")
    elif kind == events.COMPILE and e.get("forward", True) and made_graph(e):
        rank.compiles += 1  # graphs made: a frame Dynamo could not compile ran eager
    elif kind == events.RECOMPILE and not (e.get("validation") or e.get("after_validation")):
        rank.recompiles += 1  # training's (a validation pass's are kept apart)
    elif kind == events.GRAPH_BREAK:
        rank.graph_breaks += 1
    elif kind == events.FINISHED:
        rank.state = "stopped" if e.get("reason") == "stopped" else "done"
    elif kind == events.FAILED:
        rank.state = "failed"
        rank.error = e.get("what") or f"{e.get('error')}: {e.get('message')}"
    elif kind == events.RUN_EXITED and e.get("said") is False and rank.active:
        rank.state = "killed"
    return rank


def rank_samples(ranks: dict[int, RankLive], values: dict) -> None:
    for key, v in values.items():
        rank = ranks.get(int(key))
        if rank is not None:
            rank.sample = v


def job_state(ranks: dict[int, RankLive]) -> str | None:
    """The job's state as its ranks make it: failed once one failed; paused / waiting for its
    turn once every rank is; compiling while one compiles; else the ranks' common state."""
    if not ranks:
        return None
    states = [r.state for r in ranks.values()]
    if "failed" in states:
        return "failed"
    live = [r for r in ranks.values() if r.active]
    if not live:
        return "ending"  # every rank has ended; torchrun's exit brings the job's own end event
    if all(r.state == "paused" for r in live):
        return "waiting turn" if all(r.turn for r in live) else "paused"
    if any(r.state == "compiling" for r in live):
        return "compiling"
    for state in ("building", "warmup", "steady"):
        if any(r.state == state for r in live):
            return state
    return live[0].state
