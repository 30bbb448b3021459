"""summary.md's own text as HTML, so the page says what summary.md says, word for word: the
small subset export.to_markdown writes (headings, paragraphs, one table, bullet and numbered
lists nested by indent, `code` and **bold**). Everything is escaped first; nothing is fetched."""

from __future__ import annotations

import html
import re

_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITEM = re.compile(r"^( *)(- |\d+\. )(.*)$")


def inline(text: str) -> str:
    """One line's text: escaped, then `code` and **bold** (code first: its stars stay stars)."""
    parts = _CODE.split(text)
    out = []
    for k, part in enumerate(parts):
        if k % 2:
            out.append(f"<code>{html.escape(part)}</code>")
        else:
            out.append(_BOLD.sub(r"<strong>\1</strong>", html.escape(part)))
    return "".join(out)


def _cells(line: str) -> list[str]:
    """A table row's cells; an escaped pipe (``\\|``) stays inside its cell."""
    body = line.strip()[1:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def _table(lines: list[str]) -> str:
    header, rows = _cells(lines[0]), [_cells(x) for x in lines[2:]]
    head = "".join(f"<th>{inline(c)}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<{'th' if k == 0 else 'td'}>{inline(c)}</{'th' if k == 0 else 'td'}>"
                                    for k, c in enumerate(row)) + "</tr>" for row in rows)
    return f'<div class="table"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _lists(lines: list[str]) -> str:
    """Consecutive list items, nested by their indent (the deeper one inside the item above)."""
    out: list[str] = []
    stack: list[tuple[int, str]] = []  # (indent, tag) of the open lists
    for line in lines:
        m = _ITEM.match(line)
        if m is None:  # a continuation line of the item above
            out.append(" " + inline(line.strip()))
            continue
        indent, tag = len(m.group(1)), "ol" if m.group(2)[0].isdigit() else "ul"
        while stack and stack[-1][0] > indent:
            out.append(f"</li></{stack.pop()[1]}>")
        if stack and stack[-1][0] == indent:
            out.append("</li>")
        else:
            stack.append((indent, tag))
            out.append(f"<{tag}>")
        out.append(f"<li>{inline(m.group(3))}")
    while stack:
        out.append(f"</li></{stack.pop()[1]}>")
    return "".join(out)


def to_html(text: str, shift: int = 0) -> str:
    """Markdown (export.to_markdown's subset) as HTML; headings ``shift`` levels deeper."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip():
            blocks.append([])
        elif not blocks or not blocks[-1] or line.startswith("#") or (
                blocks[-1][0].startswith("#")) or _kind(line) != _kind(blocks[-1][0]) and not (
                _kind(blocks[-1][0]) == "list" and line.startswith(" ")):
            blocks.append([line])
        else:
            blocks[-1].append(line)
    out = []
    for block in filter(None, blocks):
        first = block[0]
        if first.startswith("#"):
            level = len(first) - len(first.lstrip("#"))
            out.append(f"<h{level + shift}>{inline(first.lstrip('#').strip())}</h{level + shift}>")
        elif _kind(first) == "table":
            out.append(_table(block))
        elif _kind(first) == "list":
            out.append(_lists(block))
        else:
            out.append(f"<p>{' '.join(inline(x) for x in block)}</p>")
    return "\n".join(out)


def _kind(line: str) -> str:
    if line.startswith("|"):
        return "table"
    return "list" if _ITEM.match(line) else "text"


def sections(text: str) -> tuple[str, dict[str, str]]:
    """summary.md cut at its ``## `` headings: (what comes before the first, {heading: its text
    with the heading line})."""
    head, found, name = [], {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            name = line[3:].strip()
            found[name] = [line]
        elif name is None:
            head.append(line)
        else:
            found[name].append(line)
    return "\n".join(head), {k: "\n".join(v) for k, v in found.items()}
