"""A torchrun job's ranks in its panel, in two lines: the job (world size, skew, straggler,
diverging compiles) and each rank's median own time (and its GPU's SM % on a GPU box), the
straggler highlighted; too many ranks for the width become one block a rank, its height the
rank's own time. Hidden for a single-process run. ``k`` opens the rank view for more."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tuimon.analysis import RunStats
from tuimon.fmt import fmt_ms
from tuimon.report.rank_text import strip_text
from tuimon.ui.model import RunLive

BLOCKS = "▁▂▃▄▅▆▇█"


class RankStrip(Static):
    def __init__(self) -> None:
        super().__init__(classes="rank-strip")
        self.display = False

    def show(self, live: RunLive, stats: RunStats | None) -> None:
        if not live.ranks:
            self.display = False
            return
        self.display = True
        self.update(strip(live, stats, self.size.width or 36))


# A part of the job's line in the colour of what it says (report/rank_text.py strip_text's parts).
PART_STYLE = {"world": "bold", "straggler": "bold yellow", "divergence": "bold magenta"}


def strip(live: RunLive, stats: RunStats | None, width: int) -> Text:
    world = (stats.job.world_size if stats else None) or live.world_size or len(live.ranks)
    parts = ([(x.text, PART_STYLE.get(x.figures["part"], "")) for x in strip_text(stats)]
             if stats is not None and stats.job.world_size else [(f"{world} ranks", PART_STYLE["world"])])
    failed = [r.rank for r in live.ranks.values() if r.state in ("failed", "killed")]
    if failed:
        parts.append((f"r{','.join(map(str, failed[:4]))} failed", "bold red"))
    slow = {s["rank"] for s in stats.job.stragglers} if stats else set()
    head = Text()
    for k, (part, style) in enumerate(parts):
        if k:
            head.append(" · ", style="dim")
        head.append(part, style=style)
    head.truncate(width, overflow="ellipsis")
    cells = _cells(live, stats, slow)
    if sum(len(c[0]) + 1 for c in cells) - 1 <= width:
        line = Text(" ").join(Text(text, style=style) for text, style in cells)
    else:
        line = _blocks(live, stats, slow, width)
    line.truncate(width, overflow="ellipsis")
    return Text("\n").join([head, line])


def _own(stats: RunStats | None) -> dict[int, float]:
    return {x["rank"]: ms for x in (stats.job.ranks if stats else [])
            if (ms := x.get("own_ms") or x.get("median_ms")) is not None}


def _cells(live: RunLive, stats: RunStats | None, slow: set[int]) -> list[tuple[str, str]]:
    own = _own(stats)
    out = []
    for k in sorted(live.ranks):
        r = live.ranks[k]
        text = f"r{k} " + (fmt_ms(own[k]).replace(" ", "") if k in own else r.state)
        if k in slow and stats is not None:  # slow: the stragglers stats found
            text += f" +{next(s['slower_pct'] for s in stats.job.stragglers if s['rank'] == k):.0f}%"
        sample = live.rank_samples.get(k) or {}
        if sample.get("gpus") and sample.get("sm_util") is not None:
            text += f" g{sample['sm_util']}%"
        style = ("bold red" if r.state in ("failed", "killed") else "bold yellow" if k in slow
                 else "dim" if r.state == "paused" else "")
        out.append((text, style))
    return out


def _blocks(live: RunLive, stats: RunStats | None, slow: set[int], width: int) -> Text:
    """One block a rank (as many as fit), its height its own time against the others'."""
    own = _own(stats)
    ranks = sorted(live.ranks)
    label = f"r{ranks[0]}–{ranks[-1]} "
    room = max(1, width - len(label))
    t = Text(label, style="dim")
    values = [own.get(k) for k in ranks[:room]]
    known = [v for v in values if v is not None]
    lo, hi = (min(known), max(known)) if known else (0.0, 0.0)
    for k, v in zip(ranks[:room], values, strict=False):
        state = live.ranks[k].state
        if v is None:
            t.append("·", style="dim")
            continue
        level = 0 if hi <= lo else round((v - lo) / (hi - lo) * (len(BLOCKS) - 1))
        t.append(BLOCKS[level], style="bold red" if state in ("failed", "killed") else
                 "bold yellow" if k in slow else "green")
    return t
