"""report.html: one self-contained page, its words the summary's document as summary.md has them
(html/lines.py), its figures inline as SVG. Nothing is fetched, and a Content-Security-Policy
forbids it, so a copy mailed or attached to a PR opens offline."""

from __future__ import annotations

import datetime
import html
from dataclasses import dataclass, field
from pathlib import Path

import tuimon
from tuimon.report import sections
from tuimon.report.html import canvas, lines
from tuimon.report.html.canvas import Fig
from tuimon.report.html.compile_fig import compile_timeline
from tuimon.report.html.data import Report, read
from tuimon.report.html.payoff_fig import payoff
from tuimon.report.html.phase_fig import phase_bars
from tuimon.report.html.step_figs import distributions, step_time
from tuimon.sessiondir import listing, store

REPORT = "report.html"
FIGURES = "report-figures"  # --png: each figure as PNG and SVG, in this folder beside report.html
CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;
 color:#1d1d1f;background:#fafafa}
main{max-width:1000px;margin:0 auto;padding:18px 28px 60px;background:#fff}
h1{font-size:22px;margin:8px 0 2px}h2{font-size:18px;margin:30px 0 8px;border-bottom:1px solid #ddd;
 padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}h4{font-size:14px}
nav{font-size:13px;color:#555}nav a{margin-right:12px;color:#0b5cad;text-decoration:none}
.sub{color:#666;font-size:12.5px}
.verdict{font-size:16px;background:#eef5fc;border-left:4px solid #0072B2;padding:10px 14px;margin:14px 0}
.partial{background:#fff4e0;border-left:4px solid #E69F00;padding:8px 14px;margin:10px 0}
.table{overflow-x:auto}table{border-collapse:collapse;font-size:12.5px;margin:8px 0}
th,td{border:1px solid #e0e0e0;padding:3px 7px;text-align:left;vertical-align:top}
thead th{background:#f3f3f3}tbody th{font-weight:600;white-space:nowrap;background:#fafafa}
code{font:12px ui-monospace,"DejaVu Sans Mono",monospace;background:#f3f3f3;padding:0 3px;border-radius:3px;
 overflow-wrap:anywhere}
figure{margin:14px 0 22px}figure svg{width:100%;height:auto}
figcaption{font-size:12.5px;color:#444;margin-top:4px}.na{color:#666;font-style:italic}
.error{color:#B00000}
"""
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
TABLE = ("session", "caution", "table", "notes", "method")  # the document's sections "The table" holds


@dataclass
class Written:
    """What ``write`` wrote: the page, its size, and with --png each figure's PNG and SVG."""

    html: Path
    bytes: int
    figures: list[Path] = field(default_factory=list)
    partial: bool = False  # the session had not ended: still running, or ``stale`` (its owner gone)
    stale: bool = False


def _figure(fig: Fig | None, why: str = "") -> str:
    if fig is None:
        return f'<p class="na">{html.escape(why)}.</p>'
    return (f'<figure id="fig-{fig.name}" role="img" aria-label="{html.escape(fig.title)}">{fig.svg()}'
            f"<figcaption>{html.escape(fig.caption)}</figcaption></figure>")


def _drawn(draw, rep: Report) -> tuple[Fig | None, str]:
    """A figure, or why it is not there; a figure that fails to draw costs the page that figure
    only, said in its place (the rest of the report still stands)."""
    try:
        out = draw(rep)
    except canvas.Missing:
        raise
    except Exception as exc:  # noqa: BLE001 - one figure's bug must not lose the whole report
        return None, f"this figure could not be drawn ({type(exc).__name__}: {exc})"
    return out if isinstance(out, tuple) else (out, "")


def build(rep: Report) -> tuple[str, list[Fig]]:
    """The page's HTML and its figures."""
    meta, summary = rep.meta, rep.summary
    doc = sections.document(meta, summary, (*sections.SUMMARY, "memory"))
    verdict = next((x.text for x in doc["verdict"].lines), None)
    figs: list[Fig] = []

    def fig(draw, fallback: str = "nothing to draw in this session") -> str:
        drawn, why = _drawn(draw, rep)
        if drawn is not None:
            figs.append(drawn)
        return _figure(drawn, why or fallback)

    name = meta.get("name") or rep.path.name
    parts = [
        ("payoff", "Is compile worth it", fig(payoff)),
        ("table", "The table", lines.sections(*(doc[key] for key in TABLE))),
        ("steps", "Step time over wall time", fig(step_time, "no step was recorded")),
        ("distributions", "Step-time distributions", fig(distributions, "no steady-state step yet")),
        ("phases", "Where the step goes", fig(phase_bars)),
        ("compiles", "Compile timeline", fig(compile_timeline)),
        ("mfu", "FLOPs and MFU per phase",
         lines.sections(doc["flops"]) or f'<p class="na">{sections.NOT_MEASURED}.</p>'),
        ("memory", "Memory per phase", lines.sections(doc["memory"])),
    ]
    parts += [(s.key, s.title, lines.sections(s)) for s in (doc["tried"], doc["why"], doc["files"]) if s]
    when = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    partial = (f'<p class="partial"><strong>Partial:</strong> {partial_text(rep, when)}</p>'
               if rep.partial else "")
    nav = "".join(f'<a href="#{key}">{html.escape(title.split(",")[0])}</a>' for key, title, _ in parts)
    body = "\n".join(f'<section id="{key}"><h2>{html.escape(title)}</h2>\n{content}</section>'
                     for key, title, content in parts)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="tuimon {tuimon.__version__}">
<title>tuimon report: {html.escape(name)}</title>
<style>{CSS}</style></head>
<body><main>
<h1>tuimon report: {html.escape(name)}</h1>
<p class="sub">{html.escape(str(rep.path))} · written {when} by tuimon report {tuimon.__version__} from the
session's events alone · one file, nothing fetched: it opens offline</p>
{partial}
{f'<p class="verdict">{lines.inline(verdict)}</p>' if verdict else ''}
<nav>{nav}</nav>
{body}
</main></body></html>
"""
    return page, figs


def partial_text(rep: Report, when: str) -> str:
    """Why the page is partial: still running, or its owner gone without ending it."""
    steps = f"{sum(map(len, rep.steps.values())):,}"
    if rep.state == listing.STALE:
        return (f"this session never ended: the process that ran it is gone (killed, or the machine "
                f"went down). The page shows the {steps} steps it recorded.")
    return (f"this session was still running when this report was written ({when}): it shows the "
            f"{steps} steps recorded so far. Run <code>tuimon report {html.escape(str(rep.path))}</code> "
            f"again once it has ended.")


def write(path: str | Path, png: bool = False, sessions: list[Path] | None = None) -> Written:
    """SESSION/report.html (and with ``png`` SESSION/report-figures/NAME.png and .svg); nothing
    else in the session is touched. ``sessions``: a job's nodes' sessions, read as one, its page
    written into ``path``. Raises OSError / ValueError (unreadable, unwritable, not one job) and
    canvas.Missing (no matplotlib)."""
    rep = read(path, sessions)
    page, figs = build(rep)
    target = rep.path / REPORT
    data = page.encode("utf-8")
    store.write_atomic(target, data)
    out = Written(target, len(data), partial=rep.partial, stale=rep.state == listing.STALE)
    if png:
        folder = rep.path / FIGURES
        folder.mkdir(exist_ok=True)
        for k, f in enumerate(figs, 1):
            f.figure.suptitle(f.title, x=0.01, ha="left", fontsize=11)  # a file alone: titled
            stem = folder / f"{k}-{f.name}"
            store.write_atomic(stem.with_suffix(".png"), f.png())
            store.write_atomic(stem.with_suffix(".svg"), f.svg())
            out.figures += [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    for f in figs:  # matplotlib figures hold their artists until dropped
        f.figure.clear()
    return out
