"""--until-known in words: how far the answer is, live (the TUI's strip, headless mode's row), and
why the session stopped (summary.md under the verdict, and every other view of it).
analysis/stats/known.py decides (``Known``: a code and its figures); every sentence is here."""

from __future__ import annotations

from tuimon.analysis import known
from tuimon.fmt import fmt_about, fmt_span
from tuimon.report.document import NOTE, Line

WAITING = {  # what a round waits for, by code: (its words, with ``about`` and ``left``)
    "building": "{about} starting",
    "compiling": "{about} compiling",
    "settling": "{about} settling ({left} without a compile to go)",
    "epoch": "round 1 stepping to its first epoch's end, where a validation pass would compile",
    "steps": "{about} measuring ({left} of steady state to go)",  # steps, or seconds once enough
}
SAID = {"faster": "{about} is faster", "slower": "nothing is faster: {about} is the closest",
        "same": "compile makes no difference within ±{margin}",
        "no_answer": "more rounds could not bring an answer (the verdict says why)",
        "unreliable": "the comparison is unreliable (the verdict says why and what to do)"}


def _margin(k: known.Known) -> str:
    return f"{k.margin * 100:g} %"


def _interval(k: known.Known) -> str:
    if k.lo is None:
        return f"{k.about}"
    return f"{k.about} at {k.speedup:.2f}× (95 % CI {k.lo:.2f}–{k.hi:.2f})"


def progress_text(k: known.Known) -> str:
    """The live line: 'until known: round 2 · default/script's compiles settling (12 steps without
    one to go) · ~40 s to a verdict within ±3 %'."""
    rounds = f"round {k.round}" + (f" of at most {k.max_rounds}" if k.max_rounds else "")
    if k.code in known.ANSWERS:
        return f"until known: known after {k.rounds} rounds: " + SAID[k.code].format(
            about=k.about, margin=_margin(k))
    if k.code in WAITING:
        left = f"{k.left} step{'s' if k.left != 1 else ''}" if k.left else (
            f"{k.left_s:.0f} s" if k.left_s else "a few steps")
        what = WAITING[k.code].format(about=k.about, left=left)
    elif k.code == "rounds":
        what = f"the spread between processes needs {k.round + (k.rounds_left or 0)} rounds"
    else:  # interval
        what = f"{_interval(k)}: not told apart from 1 or ±{_margin(k)} yet"
    return f"until known: {rounds} · {what} · {_eta(k)}"


def _eta(k: known.Known) -> str:
    if k.eta_s is not None:
        return f"{fmt_about(k.eta_s)} to a verdict within ±{_margin(k)}"
    if k.code == "interval" and k.rounds_left is None:
        return "not within the rounds the budget allows, at today's spread"
    return "time to a verdict: not known yet"


def stop_text(k: known.Known) -> str:
    """Why the session stopped, after its verdict: 'Stopped after 4 rounds (2.1 min of stepping):
    the answer was known — default/script is faster.'"""
    ran = max(k.round or 0, k.rounds)
    rounds = f"{ran} round{'s' if ran != 1 else ''}"
    if k.rounds < ran:  # a round beside other processes' load is left out of every variant
        rounds += f" ({k.rounds} of them weighed)"
    stepped = f" ({fmt_span(k.stepped_s)} of stepping)" if k.stepped_s else ""
    if k.stopped == "known":
        what = SAID.get(k.code, k.code).format(about=k.about, margin=_margin(k))
        return f"Stopped after {rounds}{stepped}: the answer was known — {what}."
    open_ = f" ({_interval(k)} was not decided yet)" if k.code == "interval" else ""
    if k.stopped == "budget":
        budget = fmt_span(k.budget_s)
        return (f"Stopped after {rounds}: the --budget of {budget} of stepping was spent, and the "
                f"answer is what it is{open_}; a longer --budget measures on.")
    if k.stopped == "max_rounds":
        return (f"Stopped after {rounds}, the most the budget had room for at round 2's length: the "
                f"answer is what it is{open_}.")
    if k.stopped == "failed":
        return f"Stopped after {rounds}: a run failed (its line says why){open_}."
    return f"Stopped by hand after {rounds}{stepped}: the answer is what it is{open_}."


def line(k: known.Known) -> Line:
    """The verdict section's line under the verdict: why it stopped, or how far it is."""
    text = stop_text(k) if k.stopped else progress_text(k)
    return Line(NOTE, text, {"kind": "known", "code": k.code, "stopped": k.stopped})
