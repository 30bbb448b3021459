"""The essential stage's part of the RESULTS.md section (bench/gpu/report.py): how the call kept
to its cap, each step's limit and wall time in the call's order, and every claim the call
measures, in that order, with what was expected, what was measured and whether it holds."""

from __future__ import annotations

from claims_essential import ORDER

from tuimon.fmt import fmt_s


def section(docs: dict[str, dict], rows: list[dict]) -> list[str]:
    doc = docs.get("essential")
    if doc is None:
        return ["### The essential call", "", "Not run: `bash bench/gpu/all.sh essential` is the first "
                "call a lent device gets.", ""]
    setup = doc.get("setup_s") or 0
    out = ["### The essential call", "",
           f"`bash bench/gpu/all.sh essential`: set-up {fmt_s(setup)}, then {fmt_s(doc.get('wall_s'))} of "
           f"its {fmt_s(doc['budget_s'])} budget; the call's cap {fmt_s(doc.get('call_s'))}, set-up "
           "included.", "",
           "| step | limit | wall | status | command as sized |", "|---|---|---|---|---|"]
    for s in doc.get("steps", []):
        sized = " ".join(s.get("sized_argv", [])[-6:])
        out.append(f"| {s['name']} | {fmt_s(s.get('limit_s') or s['timeout_s'])} | "
                   f"{fmt_s(s['wall_s']) if s.get('wall_s') is not None else '–'} | {s['status']} | "
                   f"{'`' + sized + '`' if sized else ''} |")
    by_name = {x["claim"]: x for x in rows}
    out += ["", "| claim | expected | measured | verdict |", "|---|---|---|---|"]
    out += [f"| {x['claim']} | {x['expected']} | {_cell(x['measured'])} | **{x['verdict']}** |"
            for x in (by_name[name] for name in ORDER if name in by_name)]
    return out + [""]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
