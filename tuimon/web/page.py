"""The page a browser tab loads from ``tuimon serve``: textual-serve's terminal under a title that
names the session. Ours, not textual-serve's template: that one fetches its font from a CDN, has
no <title>, and writes absolute URLs that break through ``ssh -L`` on another port
(docs/serve.md). Every URL here is relative to the page."""

from __future__ import annotations

import html

FONT = "static/fonts/RobotoMono-VariableFont_wght.ttf"

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="preload" href="{font}" as="font" type="font/ttf" crossorigin>
<link rel="stylesheet" href="static/css/xterm.css">
<style>
@font-face {{ font-family: "Roboto Mono"; src: url("{font}") format("truetype");
             font-weight: 100 700; font-style: normal; }}
html, body {{ margin: 0; height: 100%; background: #0c181f; overflow: hidden; }}
#terminal {{ position: absolute; inset: 0; }}
#ended {{ display: none; position: absolute; inset: 0; z-index: 10; align-items: center;
         justify-content: center; background: rgba(12, 24, 31, 0.85); color: #eee;
         font: 16px "Roboto Mono", monospace; text-align: center; }}
body.-closed #ended {{ display: flex; }}
#ended button {{ margin-top: 16px; padding: 12px 28px; font: inherit; color: #fff;
                background: #5e0ba7; border: none; cursor: pointer; }}
</style>
<script src="static/js/textual.js"></script>
</head>
<body>
<div id="terminal" class="textual-terminal"></div>
<div id="ended"><div>This viewer has ended ({name}).<br>
Runs you did not stop go on.<br><button type="button" onclick="location.reload()">Open it
again</button></div></div>
<script>
(function () {{
  var here = new URL("ws", location.href);
  here.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  var terminal = document.getElementById("terminal");
  terminal.dataset.sessionWebsocketUrl = here.href;
  terminal.dataset.fontSize = new URLSearchParams(location.search).get("fontsize") || "16";
  // Let the font load before xterm.js measures its cells (textual.js starts on window.onload).
  var start = window.onload;
  window.onload = function (event) {{
    document.fonts.load('16px "Roboto Mono"').catch(function () {{}})
      .then(function () {{ start(event); }});
  }};
}})();
</script>
</body>
</html>
"""


def render(title: str, name: str) -> str:
    """The page, its <title> ``title``; ``name`` (the session) in the ended notice."""
    return PAGE.format(title=html.escape(title), name=html.escape(name), font=FONT)
