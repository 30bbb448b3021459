"""The docs: README.md is a short front door, docs/*.md hold the reference, and nothing dangles.

Every relative link and #anchor in README.md and docs/*.md must resolve (the file exists; the
anchor is a heading slug as GitHub makes it), README stays under ~200 lines, and every flag of
the run command (read from its argparse parser) is mentioned somewhere in docs/.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest

from tuimon.cli import run_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
README_MAX_LINES = 200

FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.M | re.S)
INDENTED = re.compile(r"(?:^(?: {4}|\t).*\n?)+", re.M)  # indented code blocks
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(\S+)", re.M)
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$", re.M)
EXPLICIT_ANCHOR = re.compile(r"""<a\s+(?:name|id)=["']([^"']+)["']""")


def strip_code(text: str) -> str:
    """The text a reader sees as prose: no fenced or indented code blocks, no code spans."""
    text = FENCE.sub("", text)
    text = INDENTED.sub("", text)
    return CODE_SPAN.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lowercased, punctuation (anything but
    letters, digits, '_', '-' and spaces) removed, each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every anchor GitHub makes for a page: heading slugs, repeats numbered -1, -2, ..."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set(EXPLICIT_ANCHOR.findall(text))
    for _, heading in HEADING.findall(text):
        base = slug(heading)
        n = seen.get(base, 0)
        found.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return frozenset(found)


def links(path: Path) -> list[str]:
    prose = strip_code(path.read_text(encoding="utf-8"))
    return LINK.findall(prose) + REF_DEF.findall(prose)


def is_external(target: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I))  # http:, https:, mailto:, ...


def broken(page: Path, target: str) -> str | None:
    """Why a link does not resolve, or None."""
    if is_external(target):
        return None
    path_part, _, anchor = target.partition("#")
    dest = (page.parent / unquote(path_part)).resolve() if path_part else page
    if not dest.exists():
        return f"{target}: no such file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}"
    if anchor:
        if dest.is_dir() or dest.suffix.lower() not in (".md", ".markdown"):
            return f"{target}: an anchor into a non-Markdown file"
        if unquote(anchor) not in anchors(dest):
            return f"{target}: no heading in {dest.name} gives #{anchor}"
    return None


def test_pages_exist():
    assert (ROOT / "README.md").is_file()
    assert len(PAGES) > 5, "docs/ holds the reference pages"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    problems = [why for target in links(page) if (why := broken(page, target))]
    assert not problems, f"{page.relative_to(ROOT)}:\n  " + "\n  ".join(problems)


def test_every_docs_page_is_linked_from_the_docs_or_readme():
    linked = set()
    for page in PAGES:
        for target in links(page):
            path_part = target.partition("#")[0]
            if path_part and not is_external(target):
                linked.add((page.parent / unquote(path_part)).resolve())
    orphans = [p.name for p in DOCS.glob("*.md") if p.resolve() not in linked]
    assert not orphans, f"docs pages nobody links to: {orphans}"


def test_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; the reference goes in docs/"


def test_readme_keeps_the_test_command_ci_runs():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make test" in text and "make demo" in text
    # what `make test` runs, as README says: the parallel pass, then the serial tests
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = make[make.index("\ntest: venv"):].split("\n\n")[0]
    assert '-m pytest -q -n $(TEST_JOBS)' in recipe and '-m "not serial"' in recipe and "-m serial" in recipe
    assert "2 workers, then the serial tests" in text


def run_flags(parser=None) -> list[str]:
    return sorted({opt for action in (parser or run_parser())._actions for opt in action.option_strings
                   if opt.startswith("--")})


def test_every_run_flag_is_documented():
    docs = "\n".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md"))
    flags = run_flags()
    assert "--modes" in flags and "--detach" in flags  # the parser was read
    missing = [f for f in flags if not re.search(re.escape(f) + r"(?![\w-])", docs)]
    assert not missing, f"run flags not mentioned in docs/: {missing}"


def test_every_sweep_summary_and_report_flag_is_documented_in_commands():
    from tuimon.cli.report import report_parser
    from tuimon.cli.summary import summary_parser
    from tuimon.cli.sweep import sweep_parser

    commands = (DOCS / "commands.md").read_text(encoding="utf-8")
    flags = {f for parser in (sweep_parser(), summary_parser(), report_parser()) for f in run_flags(parser)}
    assert {"--budget", "--horizon", "--loss-tolerance", "--png"} <= flags
    missing = [f for f in sorted(flags) if not re.search(re.escape(f) + r"(?![\w-])", commands)]
    assert not missing, f"flags not mentioned in docs/commands.md: {missing}"


@pytest.mark.parametrize(("heading", "expected"), [
    ("What survives what", "what-survives-what"),
    ("`tuimon summary SESSION_DIR [--format md|json|csv] [--force]`",
     "tuimon-summary-session_dir---format-mdjsoncsv---force"),
    ("2026-11-22 — repeatability with `--repeats` (issue 8)",
     "2026-11-22--repeatability-with---repeats-issue-8"),
    ("Steady state: warm-up and compiles", "steady-state-warm-up-and-compiles"),
    ("GPU paths and [system probes](gpu.md)", "gpu-paths-and-system-probes"),
])
def test_slug_is_githubs(heading, expected):
    assert slug(heading) == expected


def test_checker_catches_what_it_should(tmp_path, monkeypatch):
    page = DOCS / "commands.md"
    assert broken(page, "measuring.md#what-you-get") is None
    assert broken(page, "nosuch.md") is not None
    assert broken(page, "measuring.md#no-such-heading") is not None
    assert broken(page, "#exit-codes") is None and broken(page, "#exit-code") is not None
    assert broken(page, "https://example.com/x.md#y") is None
    text = "see [a](real.md) and `[b](ignored.md)`\n\n```\n[c](ignored.md)\n```\n"
    (tmp_path / "p.md").write_text(text)
    assert links(tmp_path / "p.md") == ["real.md"]


def _layout_sections(text: str) -> dict[str, str]:
    """docs/layout.md's tree: each directory ("tuimon/analysis/stats") -> the text of its block
    (from its own line to the next line indented no deeper than it)."""
    lines = [line for line in text.splitlines() if line.startswith("    ")]
    sections, stack = {}, []  # stack: (indent, path)
    for k, line in enumerate(lines):
        m = re.match(r"^( +)([\w.]+)/\s", line + " ")
        if not m:
            continue
        indent = len(m.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "/".join([p for _, p in stack] + [m.group(2)])
        stack.append((indent, m.group(2)))
        end = next((j for j in range(k + 1, len(lines))
                    if len(lines[j]) - len(lines[j].lstrip(" ")) <= indent and lines[j].strip()), len(lines))
        sections[path] = "\n".join(lines[k:end])
    return sections


def layout_missing(root: Path, layout: str) -> list[str]:
    """Modules under ``root`` (tuimon/) that docs/layout.md does not name in their directory's block."""
    sections = _layout_sections(layout)
    missing = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent)
        if path.name == "__init__.py" and path.parent != root:
            continue
        block = sections.get(str(rel.parent), "")
        if not re.search(rf"(?<![\w.]){re.escape(path.name)}\b", block):
            missing.append(str(rel))
    return missing


def test_layout_names_every_module():
    """docs/layout.md is the newcomer's map: every module has its line, in its own directory."""
    assert layout_missing(ROOT / "tuimon", (DOCS / "layout.md").read_text()) == []


def test_layout_check_finds_a_missing_module(tmp_path):
    (tmp_path / "tuimon" / "stats").mkdir(parents=True)
    for name in ("__init__.py", "a.py", "stats/b.py", "stats/c.py"):
        (tmp_path / "tuimon" / name).write_text("")
    layout = ("    tuimon/\n      __init__.py  x\n      a.py  y\n      stats/  z\n        b.py  w\n"
              "    c.py  (not in stats/)\n")
    assert layout_missing(tmp_path / "tuimon", layout) == ["tuimon/stats/c.py"]


def test_every_tui_key_is_in_the_tui_pages_key_table():
    """ui/keys.py is the one list of keys: each one with a help line has a row in docs/tui.md."""
    from tuimon.ui.keys import KEYS

    text = (DOCS / "tui.md").read_text(encoding="utf-8").split("## Keys", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in text.splitlines() if line.startswith("| `")]
    shown = {name for row in rows for name in re.findall(r"`([^`]+)`", row)}
    assert {"t", "↑", "↓", "w"} <= shown  # the table was read
    missing = [name for k in KEYS if k.help for name in (k.shown or k.keys).replace("/", " ").split()
               if name not in shown]
    assert not missing, f"keys not in docs/tui.md's key table: {missing}"
