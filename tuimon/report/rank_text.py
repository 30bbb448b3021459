"""A torchrun job's ranks in words: the summary table's rank rows, the notes of summary.md and
the terminal, and the short texts the TUI's rank strip and rank view share. Numbers come from
the statistics (analysis/stats/ranks.py); nothing is computed here but their wording."""

from __future__ import annotations

from tuimon.analysis import PART_SHORT, Point, RunStats, own_time_spread
from tuimon.fmt import DASH, fmt_ms
from tuimon.report.document import DETAIL, FACT, NOTE, WARNING, Line

PER_RANK_CELL = 8  # up to this many ranks, the table names each one's median


def world_text(r: RunStats) -> str:
    """'2 ranks · gloo · 1 host'"""
    if not r.job.world_size:
        return DASH
    hosts = len(r.job.hosts)
    parts = [f"{r.job.world_size} rank{'s' if r.job.world_size != 1 else ''}"]
    if r.job.backend:
        parts.append(r.job.backend)
    if hosts:
        parts.append(f"{hosts} host{'s' if hosts != 1 else ''}")
    seen = len(r.job.ranks)
    if seen and seen < r.job.world_size:
        parts.append(f"{seen} seen")
    return " · ".join(parts)


def per_rank_text(r: RunStats) -> str:
    """Each rank's median step (own time when it waited for others), or the spread of many."""
    rows = [x for x in r.job.ranks if x.get("median_ms") is not None]
    if not rows:
        return DASH
    if len(rows) <= PER_RANK_CELL:
        return " · ".join(f"r{x['rank']} {fmt_ms(x['median_ms'])}"
                          + (f" (own {fmt_ms(x['own_ms'])})" if x.get("waited") else "") for x in rows)
    fastest, middle, slowest = own_time_spread(rows)
    return (f"own time: fastest r{fastest['rank']} {fmt_ms(fastest['own_ms'])} · median "
            f"{fmt_ms(middle)} · slowest r{slowest['rank']} {fmt_ms(slowest['own_ms'])}")


def collectives_text(r: RunStats) -> str:
    """Each rank's time a step in FSDP2's all-gathers and reduce-scatters (CPU, gloo), or why it
    cannot be told."""
    said = [x for x in r.job.ranks if x.get("collectives")]
    if not said:
        return DASH
    told = [x for x in said if x.get("all_gather_ms") is not None]
    if not told:
        return "cannot tell: no window of steps past the warm-up (run more steps)"
    cells = [f"r{x['rank']} all-gather {fmt_ms(x['all_gather_ms'])} · reduce-scatter "
             f"{fmt_ms(x['reduce_scatter_ms'])}" for x in told[:PER_RANK_CELL]]
    more = f"; {len(told) - PER_RANK_CELL} more ranks in summary.json" if len(told) > PER_RANK_CELL else ""
    return "; ".join(cells) + more


def collectives_matter(runs: list[RunStats]) -> bool:
    """A job whose ranks timed FSDP2's collectives: its row is shown."""
    return any(x.get("collectives") for r in runs for x in r.job.ranks)


def rank_names(ranks: list[int]) -> str:
    """'rank 3', 'ranks 0, 2–7'"""
    ranks = sorted(ranks)
    parts, k = [], 0
    while k < len(ranks):
        j = k
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        parts.append(str(ranks[k]) if j == k else f"{ranks[k]}{',' if j == k + 1 else '–'}"
                     f"{' ' if j == k + 1 else ''}{ranks[j]}")
        k = j + 1
    return f"rank{'s' if len(ranks) > 1 else ''} {', '.join(parts)}"


COUNTED = {"graphs": "graphs compiled", "breaks": "graph breaks", "recompiles": "recompiles"}


def divergence_line(d: Point) -> str:
    """'graphs compiled: rank 1: 3, ranks 0, 2–7: 2', 'step 70 compiled on rank 1 only (why)'."""
    if d.code == "counts":
        groups = ", ".join(f"{rank_names(ranks)}: {v}" for ranks, v in d.get("groups"))
        return f"{COUNTED[d.get('what')]}: {groups}"
    why = f" ({d.get('why')})" if d.get("why") else ""
    return f"step {d.get('step')} compiled on {rank_names(d.get('ranks'))} only{why}"


def skew_text(r: RunStats) -> str:
    return DASH if r.job.skew_pct is None else f"{r.job.skew_pct:.0f} %"


def straggler_text(r: RunStats) -> str:
    if not r.job.world_size:
        return DASH
    if not r.job.stragglers:
        return "none" if r.job.ranks and any(x.get("own_ms") for x in r.job.ranks) else DASH
    s = r.job.stragglers[0]
    own = {x["rank"]: x.get("own_ms") for x in r.job.ranks}
    text = (f"rank {s['rank']}: {s['slower_pct']:.0f} % slower than the others "
            f"(+{fmt_ms(s['slower_ms'])} a step, own time {fmt_ms(own.get(s['rank']))}) "
            f"since step {s['since']}")
    if s.get("phase"):  # the phase it is slow in (backward less its all-reduce wait)
        text += f", slow in {s['phase']} (+{fmt_ms(s['phase_ms'])} a step)"
    if len(r.job.stragglers) > 1:
        text += f"; also {rank_names([x['rank'] for x in r.job.stragglers[1:]])}"
    return text


def divergence_text(r: RunStats) -> str:
    if not r.job.world_size:
        return DASH
    return "; ".join(map(divergence_line, r.job.compile_divergence)) if r.job.compile_divergence else "none"


RANK_ROWS = [
    ("ranks (world size)", world_text),
    ("median step per rank", per_rank_text),
    ("skew (slowest vs median rank)", skew_text),
    ("straggler", straggler_text),
    ("compile divergence across ranks", divergence_text),
]


def rank_notes(r: RunStats) -> list[Line]:
    """The notes on a job: ranks that failed or were ended, stragglers, divergence."""
    said = []
    for x in r.job.ranks:
        if x.get("status") == "failed" and x.get("error"):
            said.append(f"rank {x['rank']} failed after {x['steps']} steps: {x['error']}")
        elif x.get("status") == "killed":
            said.append(f"rank {x['rank']} ended without a word after {x['steps']} steps (torchrun "
                        "ended it, or it was killed)")
    if r.job.stragglers:
        said.append(f"straggler {straggler_text(r)}; the others wait for it in each step's "
                    "collective (DDP's gradient all-reduce)")
    said += [f"compiles diverge across ranks: {divergence_line(d)}" for d in r.job.compile_divergence]
    return [Line(DETAIL, text, {"label": r.label, "run": r.run}) for text in said]


def strip_text(r: RunStats) -> list[Line]:
    """A panel's line, in parts: '2 ranks', 'skew 3%', 'straggler r1', 'compiles diverge'; each
    part's ``figures["part"]`` says which (world, skew, straggler, divergence)."""
    parts = [Line(FACT, f"{r.job.world_size} ranks", {"part": "world"})]
    if r.job.skew_pct is not None:
        parts.append(Line(NOTE, f"skew {r.job.skew_pct:.0f}%", {"part": "skew"}))
    if r.job.stragglers:
        slow = r.job.stragglers[0]
        where = f" in {PART_SHORT[slow['phase']]}" if slow.get("phase") else ""
        parts.append(Line(WARNING, f"straggler r{slow['rank']}{where}", {"part": "straggler"}))
    if r.job.compile_divergence:
        parts.append(Line(WARNING, "compiles diverge", {"part": "divergence"}))
    return parts
