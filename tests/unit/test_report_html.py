"""tuimon report (issue 35): SESSION/report.html, one self-contained page, from synthetic sessions
(tests/synthetic_session.py) and the recorded one (tests/data/session_tiny_mlp): its content in
summary.md's words, its figures, nothing fetched, its size for a 10,000-step session, --png, what
it leaves alone, bad input, a live session, and matplotlib missing. The page in a real browser:
tests/e2e/test_report_browser.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from synthetic_session import session

from tuimon.analysis import summarize
from tuimon.cli import main
from tuimon.report import memory_text, sections, verdict_text
from tuimon.report.document import (
    ADVICE,
    CODE,
    DETAIL,
    EVIDENCE,
    FAILURE,
    FINDING,
    TEXT,
    Line,
    Section,
    Table,
)
from tuimon.report.html import lines, page
from tuimon.report.html.data import read
from tuimon.report.table import breakeven_text
from tuimon.sessiondir import listing

RECORDED = Path(__file__).parents[1] / "data" / "session_tiny_mlp"
ROOT = Path(__file__).parents[2]


def external(text: str) -> list[str]:
    """Anything the page could fetch: a script, a src / href / url() that is not on the page."""
    found = re.findall(r"<script|<link|<iframe|<img|@import", text)
    found += [u for u in re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', text) if not u.startswith("#")]
    found += re.findall(r"url\(\s*['\"]?(?!#)[^)]*\)", text)
    return found


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """A 10,000-step session of two runs taking turns, with GPU samples."""
    return session(tmp_path_factory.mktemp("big"), "s10k", steps=10_000, gpu=True, turn=500)


@pytest.fixture(scope="module")
def big_page(big) -> str:
    written = page.write(big)
    assert written.html == big / "report.html" and written.bytes == written.html.stat().st_size
    return written.html.read_text(encoding="utf-8")


def test_the_page_holds_the_verdict_the_table_and_every_figure_in_summary_mds_words(big, big_page):
    rep = read(big)
    text = big_page
    assert verdict_text.line(rep.summary.verdict) in text.replace("&#x27;", "'")
    for section in ("payoff", "table", "steps", "distributions", "phases", "compiles", "mfu", "memory"):
        assert f'<section id="{section}">' in text
    for fig in ("payoff", "step-time", "distributions", "phases"):
        assert re.search(f'<figure id="fig-{fig}" role="img" aria-label="[^"]+"><svg', text)
    assert text.count("<svg") == 4  # no compile events in a synthetic session: said instead
    assert "no compile was recorded in this session" in text
    assert "could not be drawn" not in text
    # summary.md's rows and notes, as summary.md words them
    for row in ("median step (p10–p90)", "speedup vs eager", "compile pays off after", "GPU util (mean)"):
        assert f"<th>{row}</th>" in text
    compiled = next(r for r in rep.summary.runs if r.compiled)
    assert html_text(breakeven_text(compiled)) in text  # the break-even, in the table's words
    assert f"step {compiled.compare.breakeven_steps:,}" in text  # ... and marked on the figure
    assert text.count(sections.NOT_MEASURED) == 1  # MFU: not measured here
    # memory per phase and energy in the summary's words: n/a on a CPU, with the reason
    memory = text[text.index('<section id="memory">'):]
    assert "<th>memory per phase (allocator peak)</th>" in memory and "<th>energy per step</th>" in memory
    assert "n/a (CPU: the allocator" in memory
    assert external(text) == []
    assert "Content-Security-Policy" in text and "default-src 'none'" in text


def html_text(s: str) -> str:
    import html

    return html.escape(s)


def test_a_10000_step_session_stays_under_2_mb_and_its_distribution_counts_every_step(big, big_page):
    size = len(big_page.encode("utf-8"))
    assert size < 2_000_000, size
    rep = read(big)
    for r in rep.rows():
        steady = rep.steady(r)
        assert len(steady) >= r.timing.measured > 9_000  # every step, not a sample
        assert f"{r.label}: median" in big_page and f"{len(steady):,} steps" in big_page
    # the step-time lines are downsampled, and the caption says so
    assert "(top; 400 columns of" in big_page and "(below; 400 columns of 25 step(s))" in big_page
    assert "20,000 steps in all" in big_page


def test_png_writes_each_figure_as_png_and_svg_and_nothing_else_is_touched(tmp_path, capsys):
    s = Path(shutil.copytree(RECORDED, tmp_path / "session"))
    before = {p: p.stat().st_mtime_ns for p in s.rglob("*")}
    assert main(["report", str(s), "--png"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"tuimon: wrote {s / 'report.html'} (") and out.count("\n") == 0
    assert f"figures as PNG and SVG in {s / 'report-figures'}/" in out
    after = {p: p.stat().st_mtime_ns for p in s.rglob("*")}
    new = sorted(str(p.relative_to(s)) for p in after.keys() - before.keys())
    assert {k: v for k, v in after.items() if k in before} == before  # nothing changed
    stems = ["1-payoff", "2-step-time", "3-distributions"]  # recorded before phases and compile events
    assert new == sorted(["report.html", "report-figures",
                          *[f"report-figures/{n}.{ext}" for n in stems for ext in ("png", "svg")]])
    figs = s / "report-figures"
    assert (figs / "1-payoff.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (figs / "3-distributions.svg").read_text().startswith("<svg")


def test_the_compile_timeline_draws_each_compile_by_phase_and_names_recompiles(tmp_path):
    s = session(tmp_path, "compiles", steps=200)
    t = 1_800_000_000.2
    compiles = [{"type": "compile", "t": t, "run": "default-fp32", "compile_id": "0/0", "forward": True,
                 "frame": "forward", "seconds": 0.12, "recompile_reason": None,
                 "phases": {"dynamo": 0.02, "aot": 0.03, "inductor": 0.01, "codegen": 0.05}},
                {"type": "compile", "t": t + 0.1, "run": "default-fp32", "compile_id": "0/1", "forward": True,
                 "frame": "forward", "seconds": 0.1, "phases": {"dynamo": 0.1},
                 "recompile_reason": "0/0: tensor 'x' size mismatch at index 0. expected 32, actual 8"}]
    with open(s / "events.jsonl", "a") as f:
        f.writelines(json.dumps(e) + "\n" for e in compiles)
    text = page.write(s).html.read_text()
    assert '<figure id="fig-compiles" role="img"' in text
    assert "Dynamo trace" in text and "codegen / compile" in text
    assert "default/fp32 · 0/1 forward (at " in text and ", recompile)" in text
    assert "2 compile(s)" in text and "Recompiled because: 0/1 in default/fp32: 0/0: tensor" in text


@pytest.mark.parametrize("args, line", [
    (["/no/such/dir"], "not a tuimon session directory (no such directory)"),
    ([str(ROOT / "tuimon")], "not a tuimon session directory (no events.jsonl)"),
    ([], "the following arguments are required: session"),
    (["x", "--bogus"], "unrecognized arguments"),
    ([str(RECORDED / "logs")], "not a tuimon session directory (no events.jsonl)"),
])
def test_bad_input_is_one_line_and_exit_2(args, line, capsys):
    assert main(["report", *args]) == 2
    err = capsys.readouterr().err
    assert line in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_session_without_its_meta_json_needs_force(tmp_path, capsys):
    s = tmp_path / "no-meta"
    s.mkdir()
    shutil.copy(RECORDED / "events.jsonl", s / "events.jsonl")
    assert main(["report", str(s)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--force" in err and not (s / "report.html").exists()
    assert main(["report", str(s), "--force"]) == 0
    assert (s / "report.html").is_file()


def test_an_unwritable_session_is_one_line(tmp_path, capsys):
    s = Path(shutil.copytree(RECORDED, tmp_path / "session"))
    (s / "report.html").mkdir()  # the page cannot replace a directory
    assert main(["report", str(s)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tuimon: error: cannot write the report into ") and err.count("\n") == 1


def test_a_live_session_is_reported_as_partial(tmp_path, capsys):
    s = Path(shutil.copytree(RECORDED, tmp_path / "session"))
    meta = json.loads((s / "meta.json").read_text())
    meta.update(status="running", owner=listing.owner_info("test"))  # this process owns it
    (s / "meta.json").write_text(json.dumps(meta))
    lines = (s / "events.jsonl").read_text().splitlines(keepends=True)
    (s / "events.jsonl").write_text("".join(lines[: len(lines) // 2]))  # half way through
    assert main(["report", str(s)]) == 0
    assert "— partial: the session is still running" in capsys.readouterr().out
    text = (s / "report.html").read_text()
    assert "<strong>Partial:</strong> this session was still running" in text
    assert "could not be drawn" not in text


def test_a_session_whose_owner_is_gone_is_partial_and_says_it_never_ended(tmp_path, capsys):
    s = tmp_path / "stale"
    s.mkdir()
    (s / "events.jsonl").write_text('{"type": "session_started", "t": 1800000000.0}\n')
    (s / "meta.json").write_text(json.dumps({"name": "stale", "status": "running"}))  # no owner alive
    assert main(["report", str(s)]) == 0
    assert capsys.readouterr().out.endswith("— partial: the session never ended\n")
    text = (s / "report.html").read_text()
    assert "this session never ended: the process that ran it is gone" in text
    assert "no step was recorded" in text and "could not be drawn" not in text


def test_matplotlib_missing_is_one_line_with_how_to_install_it(tmp_path):
    s = Path(shutil.copytree(RECORDED, tmp_path / "session"))
    code = ("import sys; sys.modules['matplotlib'] = None\n"  # import matplotlib now raises
            "from tuimon.cli import main; sys.exit(main(['report', sys.argv[1]]))")
    proc = subprocess.run([sys.executable, "-c", code, str(s)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and "pip install 'matplotlib" in proc.stderr
    assert not (s / "report.html").exists()


def test_measured_sections_show_what_a_session_recorded():
    from test_flops_stats import session as counted
    from test_memory_energy_stats import sequential

    mfu = lines.sections(sections.document({}, summarize(counted()))["flops"])
    assert "<li>eager/fp32: 14 GFLOP (fwd 6 G · bwd 8 G · opt 0) · fp32;" in mfu
    assert "<ul><li>MFU vs measured peak: " in mfu  # the row's details under it
    summary = summarize(sequential())
    mem = lines.sections(sections.memory(summary))
    for r in summary.runs:
        for cell in (memory_text.phases_cell, memory_text.fit_cell, memory_text.per_step_cell):
            assert f"<td>{html_text(cell(r))}</td>" in mem, cell
    assert "<th>largest batch that would fit (if activations grow with it)</th>" in mem
    assert "<th>CUDA-graph pool</th>" in mem
    none = lines.sections(sections.memory(summarize(counted())))  # a CPU: n/a, with the reason
    assert "<th>memory per phase (allocator peak)</th>" in none and "n/a (CPU: the allocator" in none


def test_the_documents_lines_are_rendered_escaped():
    said = Section("x", lines=(
        Line(TEXT, "Verdict: **keep** `a|b` <script>"),
        Line(FINDING, "first", {"level": "medium", "price": None},
             (Line(EVIDENCE, "sub <b>"), Line(ADVICE, "sub 2"))),
        Line(FINDING, "second", {"level": None, "price": "costs 1.0 ms a step"}),
        Line(TEXT, "Notes:"), Line(DETAIL, "one", {"label": "eager/fp32"}, (Line(DETAIL, "nested"),)),
        Line(FAILURE, "it failed", {}, (Line(CODE, "Traceback <x>"),))),
        table=Table(["", "x"], [["row | 1", "`c`"]]))
    out = lines.sections(said)
    assert "<p>Verdict: <strong>keep</strong> <code>a|b</code> &lt;script&gt;</p>" in out
    assert "<th>row | 1</th><td><code>c</code></td>" in out
    assert ("<ol><li><strong>first</strong> (medium)<ul><li>sub &lt;b&gt;</li><li>try: sub 2</li></ul></li>"
            "<li><strong>second</strong> — costs 1.0 ms a step</li></ol>") in out
    assert "<ul><li>eager/fp32: one<ul><li>nested</li></ul></li>" in out
    assert "<li>it failed<pre><code>Traceback &lt;x&gt;</code></pre></li>" in out
    assert "<script" not in out
