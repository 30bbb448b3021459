"""Another run's end under a run's measured steps (issue 24.3): for each run that ended while
another still had steps to take, the other's steps that overlap the end (its last step to its
run_exited), how many the steady state kept, and their max / the other's median; and the other's
steps in the 5 s after it resumed. Run by hand on recorded sessions:

    .venv/bin/python bench/handover.py SESSION_DIR [SESSION_DIR ...]

Results go in RESULTS.md."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tuimon.report import schema  # recorded sessions: summary.json in today's shape, whichever wrote it

NEAR_S = 5.0


def ends(session: Path) -> list[str]:
    evs = [json.loads(x) for x in (session / "events.jsonl").read_text().splitlines() if x.strip()]
    steps: dict[str, list[dict]] = {}
    for e in evs:
        if e["type"] == "step":
            steps.setdefault(e["run"], []).append(e)
    exited = {e["run"]: e["t"] for e in evs if e["type"] == "run_exited"}
    rows = {r["run"]: r for r in schema.read(session / "summary.json")["runs"]}
    out = []
    for a, mine in steps.items():
        last, gone = mine[-1]["t"], exited[a]
        for b, theirs in steps.items():
            after = [s for s in theirs if s["t"] > last]
            if b == a or not after or theirs[0]["t"] > last:
                continue  # it had ended, or is a later --repeats round
            median, steady = rows[b]["timing"]["median_ms"], rows[b]["timing"]["steady_from"] or 0
            over = [s for s in after if s["t"] - s["ms"] / 1000.0 < gone]
            kept = [s for s in over if s.get("phase") == "steady" and s["i"] >= steady
                    and not (s.get("gap") or s.get("profiled") or s.get("compile_ms"))]
            resumed = after[0]["t"] - after[0]["ms"] / 1000.0
            near = [s["ms"] for s in after if s["t"] - s["ms"] / 1000.0 < resumed + NEAR_S]
            worst = max((s["ms"] for s in over), default=0.0)
            out.append(f"{a} ended ({gone - last:.1f} s from its last step to its exit): {b} resumed "
                       f"{resumed - last:+.1f} s after; {len(over)} of its steps overlapped the end "
                       f"({len(kept)} in its steady state, max {worst / median:.1f}× its median "
                       f"{median:.1f} ms); its next {NEAR_S:.0f} s: {len(near)} steps, max "
                       f"{max(near, default=0.0) / median:.1f}× its median")
    return out


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(arg)
        for line in ends(Path(arg)):
            print("  " + line)
