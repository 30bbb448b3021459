"""Why a number should not be trusted, in words: other processes' load (a noisy neighbour, the
session's own other runs), page faults that differ, recompiles in the steady state, a busy
machine, a round left out. The points come from analysis/stats (load.py, faults.py,
steady_state.py, replicates.py); summary.md, summary.json, the terminal, the TUI and the
verdict's reasons all take their words from here."""

from __future__ import annotations

from tuimon.analysis import Point, RunStats
from tuimon.fmt import fmt_count, fmt_ms

# Page faults that differ although every run had the same glibc thresholds (--pin-malloc).
PINNED = ("although every run had the same allocator thresholds (--pin-malloc): another allocator "
          "preloaded (jemalloc, tcmalloc) or not glibc; --repeats 3 or more puts that luck in the interval")


def cores_text(cores: float) -> str:
    return f"~{cores:.1f} core{'' if round(cores, 1) == 1 else 's'}"


def load_words(load: dict) -> str:
    """'~1.0 core (GPU: pid 4242 at 35 %)', '~1.3 cores (~1.2 of them other runs of this
    session)': other processes' load (stats/load.py load_figures), tuimon's own part named."""
    parts = []
    if load.get("own") is not None:
        parts.append(f"~{load['own']:.1f} of them other runs of this session")
    if load.get("pids"):
        pids = ", ".join(str(p) for p in load["pids"])
        sm = f" at {load['sm']:.0f} %" if load.get("sm") is not None else ""
        parts.append(f"GPU: pid {pids}{sm}")
    if load.get("cores") is None:
        return ", ".join(parts)
    return cores_text(load["cores"]) + (f" ({', '.join(parts)})" if parts else "")


def own_note(own: dict, quiet_only: bool) -> str:
    """The steps that met the session's other runs' load, and what became of them."""
    said = f"other runs of this session used {cores_text(own['cores'])} during {own['steps']} of its steps"
    if own["dropped"]:
        return said + ": kept out of its steady state" + (" (--quiet-only)" if quiet_only else "")
    return (said + f": too many to keep out (more than {own['share']:.0%} of its steady steps), "
            "they count as load")


def row_notes(r: RunStats, quiet_only: bool) -> list[str]:
    """A row's notes: the runner's own, then the steps that met the session's other runs."""
    return list(r.notes) + ([own_note(r.load.own_load, quiet_only)] if r.load.own_load else [])


def doubt_text(d: Point) -> str:
    """One reason a row's numbers should not be trusted."""
    f = d.figures
    if d.code == "recompiled":
        return (f"{f['steps']} step(s) recompiled after warm-up (first at step {f['first']}): "
                "shapes or guards keep changing")
    if d.code == "load_differs":
        return (f"other processes used {load_words(f['base_load'])} during {f['base']}'s steps, "
                f"{load_words(f['load'])} during {f['label']}'s")
    if d.code == "sessions_load_differ":  # tuimon compare: one variant in two sessions
        return (f"other processes used {load_words(f['base_load'])} during the baseline's steps, "
                f"{load_words(f['load'])} during these")
    if d.code == "faults_differ":
        return (f"page faults differed: {fmt_count(f['base_rate'])} a step in {f['base']}, "
                f"{fmt_count(f['rate'])} in {f['label']} (≥ {fmt_ms(f['gap_ms'])} a step at "
                f"{f['fault_us']:g} µs a fault): part of the difference is memory allocation, not "
                "compile; " + (PINNED if f["pinned"] else "--pin-malloc runs every variant with the "
                               "same allocator thresholds"))
    if d.code == "steps_differ":  # analysis/stats/anatomy.py: the reading the run contradicts
        return (f"{f['lead_steps']} `{f['optimizer']}.step()` calls for {f['steps']} steps: a step was "
                "not one optimizer step, so its times are not a training step's")
    if d.code == "trainings":
        return (f"{f['count']} trainings one after another ({', '.join(f['modules'])}) pooled into "
                "one steady state: their steps are not one model's")
    raise KeyError(d.code)


def doubts_text(doubts: list[Point]) -> str:
    """A row's doubts, "; " apart; a combined row's first, its process's, name the process."""
    text = "; ".join(doubt_text(d) for d in doubts)
    process = doubts[0].get("process") if doubts else None
    return f"{process}: {text}" if process else text


def unreliable_text(r: RunStats) -> str | None:
    """Why a row's numbers should not be trusted, or None."""
    return doubts_text(r.doubts) if r.doubts else None


def busy_text(busy: Point) -> str:
    """The session's note on other processes' load (stats/load.py session_busy)."""
    if busy.code == "busy_dropped":
        return (f"other processes loaded the machine during {busy.get('steps')} steps; --quiet-only "
                "kept them out of the steady state")
    return (f"the machine was busy: other processes used {load_words(busy.get('load'))} while these "
            "steps ran; times are slower than on a quiet machine")


def round_text(why: Point) -> str:
    """Why a round of --repeats was left out (stats/replicates.py busy_rounds)."""
    return (f"round {why.get('round')} stepped beside other processes' load ({load_words(why.get('load'))} "
            f"during {why.get('label')}'s steps)")


def reason_text(reason: Point) -> str:
    """One of the verdict's reasons (stats/candidates.py reliability): the session's busy
    machine, or a row's doubts."""
    if reason.code == "row":
        return f"{reason.get('label')}: {doubts_text(reason.get('doubts'))}"
    return busy_text(reason)
