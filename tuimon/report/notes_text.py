"""The notes under the summary table, in words, as the document's "notes" section: what the
verdict left out and why, the spread between processes, each row's notes, compiles apart from
training, warm starts, captures, failures, ranks, rounds left out, graph breaks, recompiles and
why a row is unreliable; and the paragraph that says how the table's figures were measured."""

from __future__ import annotations

from tuimon.analysis import SessionSummary, columns
from tuimon.fmt import fmt_s
from tuimon.report.compile_text import compile_notes
from tuimon.report.document import DETAIL, NOTE, TEXT, UNRELIABLE, Line, Section
from tuimon.report.rank_text import rank_notes
from tuimon.report.table import failure_lines, profile_note
from tuimon.report.trust_text import doubts_text, reason_text, round_text, row_notes
from tuimon.report.untold_text import PLAN
from tuimon.report.verdict_text import disqualified
from tuimon.report.warm_text import warm_notes


def answer_notes(summary: SessionSummary) -> list[str]:
    """What the verdict left out and why, and how a sweep's --budget was spent."""
    v = summary.verdict
    out = [f"{s['label']}: skipped: {s['reason']}" for s in summary.skipped]
    if v is not None:
        out += [f"{d['label']}: {'' if d.get('uncompiled') else 'not a candidate: '}{d['reason']}"
                for d in disqualified(v)]
        out += [f"{u['label']}: losses not weighed: {u['ref']}'s own losses swing by {u['spread']:.0%} of "
                f"its first loss over the steps compared, more than their gap ({u['gap']:+.0%}) and "
                "--loss-tolerance: the gap says nothing of compile" for u in v.unweighed]
        # The verdict's reasons the rows' own notes (unreliable: ...) and the busy note do not say.
        doubted = {r.label: r.doubts for r in columns(summary) if r.doubts}
        out += [f"unreliable: {reason_text(x)}" for x in v.reasons
                if x != summary.busy and doubted.get(x.get("label")) != x.get("doubts")]
    out += noise_notes(summary)
    b = summary.budget
    if b:
        took = f"; the sweep took {fmt_s(summary.wall_s)}" if summary.wall_s else ""
        out.append(f"--budget {fmt_s(b['seconds'])}{took}: {b['text']}")
    return out


def noise_notes(summary: SessionSummary) -> list[str]:
    """The spread between processes that every interval holds, and what it lets the session tell."""
    n, plan = summary.noise, summary.plan
    if n is None or plan is None or not any(r.timing.median_ms for r in summary.runs):
        return []
    if n.measured:
        said = (f"spread between processes: ±{n.pct:.1f} % a process (pooled over {n.variants} "
                f"variants, {n.processes} processes)")
        if n.round_df:  # one session's rounds meet the same machine: the speedups pair them
            said += (f", ±{n.round_pct:.1f} % within a round (the speedups pair each round's "
                     "processes)")
        else:
            said += ", in every interval"
    else:
        said = (f"spread between processes not measured (one process a variant): ±{n.pct:.0f} % "
                "assumed in every interval; --repeats 3 or more measures it")
    k, target = plan["processes_for_target"], plan["target_pct"]
    more = (f"{k} processes a variant would tell {target:g} % (--repeats {k})" if k
            else f"even 20 processes a variant would not tell {target:g} % on this machine")
    tells = (PLAN if plan.get("untold")  # a least told change that wide is no figure
             else f"tells a speedup of ±{plan['detectable_pct']:.0f} % or more")
    return [f"{said}; with {plan['processes']} process{'es' if plan['processes'] > 1 else ''} a "
            f"variant this session {tells}; {more}"]


def _rows(summary: SessionSummary) -> list[Line]:
    """What is said of each row apart, after the session's notes."""
    out = []
    for r in columns(summary):
        of = {"label": r.label, "run": r.run}
        out += [Line(DETAIL, f"graph break at {b['where']} (×{b['count']}): {b['reason']}", of)
                for b in r.compile.graph_breaks[1:]]
        out += [Line(DETAIL, f"recompile: {reason}", of) for reason in r.compile.recompile_reasons]
        if r.doubts:
            doubts = [d.to_dict() for d in r.doubts]
            out.append(Line(UNRELIABLE, doubts_text(r.doubts), of | {"doubts": doubts}))
    return out


def section(summary: SessionSummary) -> Section:
    """"Notes:" and every note, the answer's first, then each row's, then the record's."""
    lines = [Line(NOTE, n) for n in answer_notes(summary) + compile_notes(summary)]
    lines += [Line(NOTE, n, {"label": r.label, "run": r.run})
              for r in columns(summary) for n in row_notes(r, summary.quiet_only)]
    lines += warm_notes(summary)
    lines += [Line(DETAIL, profile_note(r, p)) for r in summary.runs for p in r.profiles]
    if summary.gpu_available is False:
        lines.append(Line(DETAIL, f"GPU metrics: n/a ({summary.gpu_reason})"))
    if summary.unsupported:
        unsupported = ", ".join(summary.unsupported)
        lines.append(Line(DETAIL, f"GPU metrics this device does not report: {unsupported}"))
    lines += [Line(DETAIL, f"warning: {w}") for w in summary.warnings]
    for r in summary.runs:
        lines += failure_lines(r) + rank_notes(r)
    left = dict.fromkeys(round_text(p["why"]) for v in summary.variants for p in v.left_out)
    lines += [Line(DETAIL, f"{why}: left out of every variant's step time (the other rounds were quiet)")
              for why in left]
    lines += _rows(summary)
    if summary.unreadable_lines:
        unreadable = summary.unreadable_lines
        lines.append(Line(DETAIL, f"{unreadable} unreadable line(s) in events.jsonl were skipped"))
    return Section("notes", lines=(Line(TEXT, "Notes:"), *lines) if lines else ())


def method(summary: SessionSummary) -> Section:
    """How the table's medians and intervals were measured (a paragraph)."""
    text = ("Median over steady-state steps (warm-up, found in the data by MSER-5 unless fixed, and "
            "any step that compiled are kept apart); speedup against eager of the same precision "
            "and axis values, with a 95 % interval from order statistics widened for correlated "
            "neighbouring steps.")
    if summary.variants:
        text += (" Each variant ran in several processes (--repeats), in rounds: round 1's ran the "
                 "whole length asked for (what the script does late in its run is reached), "
                 "rounds 2 and on a share of it each (their steps are in \"median step per "
                 "process\"); its median is the geometric mean of theirs, and its interval a "
                 "Student's t interval over them, so it covers the spread between processes too.")
    else:
        text += (" The interval covers step-to-step noise within one process, not the spread "
                 "between processes: --repeats 3 or more measures that.")
    if any(r.timing.profiled_steps for r in summary.runs):
        text += " Steps a profiler capture recorded are kept apart too (the profiler slows them)."
    return Section("method", lines=(Line(TEXT, text),))
