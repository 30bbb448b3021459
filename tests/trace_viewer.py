"""chrome://tracing's trace viewer (Catapult), offline, for the tests of ``tuimon export --trace``
(tests/e2e/test_export_browser.py) and screenshots/make_trace_screenshot.py.

Debian's chromium has no chrome://tracing any more (its internal debug pages are off, and
enabling them still leaves the URL failing headless), and ui.perfetto.dev cannot be reached
from here. The same viewer ships, built into one HTML file and one script, with XProf (the
TensorBoard profiler: ``pip install --no-deps xprof``, its static files are all that is used,
never imported): its importer (``tr.importer.Import``) is chrome://tracing's, and its timeline
(``tr-ui-timeline-view``) draws what it imported. The page is opened from file:// with every
request but its own refused, and the trace handed to it as text."""

from __future__ import annotations

import importlib.util
from pathlib import Path

LOCAL = ("file:", "data:", "about:", "blob:")

# The trace imported as chrome://tracing imports it; each process's tracks, slices (all, and the
# top-level ones: a thread's slices nest inside them) and counters; the importer's warnings.
IMPORT = """(text) => {
  const model = new tr.Model();
  new tr.importer.Import(model, new tr.importer.ImportOptions()).importTraces([text]);
  window.__model = model;
  const processes = Object.values(model.processes).map(p => ({
    pid: p.pid, name: p.name,
    threads: Object.values(p.threads).map(t => ({
      name: t.name, slices: t.sliceGroup.slices.length, top: t.sliceGroup.topLevelSlices.length,
      names: [...new Set(t.sliceGroup.slices.map(s => s.title))]})),
    counters: Object.values(p.counters).map(c => c.name)}));
  return {warnings: model.importWarnings.map(w => w.type + ": " + w.message), processes,
          bounds: [model.bounds.min, model.bounds.max]};
}"""

# The timeline view over what was imported, filling the window (the viewer page's own app, which
# waits for a trace URL, is hidden).
SHOW = """() => {
  for (const el of document.body.children) {
    if (!["TEMPLATE", "DOM-MODULE", "SCRIPT", "STYLE"].includes(el.tagName)) el.style.display = "none";
  }
  const container = document.createElement("track-view-container");
  container.id = "track_view_container";
  const viewer = document.createElement("tr-ui-timeline-view");
  viewer.track_view_container = container;
  Polymer.dom(viewer).appendChild(container);
  viewer.id = "trace-viewer";
  viewer.globalMode = true;
  viewer.style.height = "100vh";
  document.body.appendChild(viewer);
  viewer.model = window.__model;
  const box = viewer.getBoundingClientRect();
  return [Math.round(box.width), Math.round(box.height)];
}"""


def find() -> tuple[Path | None, str]:
    """(the viewer's HTML file, '') or (None, why not)."""
    spec = importlib.util.find_spec("xprof")  # found, not imported
    if spec is None or not spec.submodule_search_locations:
        return None, "the trace viewer comes with xprof: pip install --no-deps xprof"
    page = Path(next(iter(spec.submodule_search_locations))) / "static" / "trace_viewer_index.html"
    if not page.is_file():
        return None, f"this xprof has no Catapult trace viewer ({page} is missing)"
    return page, ""


def open_offline(chrome, viewer: Path, width: int = 1600, height: int = 1000):
    """A tab on the viewer's page with every request but local ones refused (and recorded)."""
    page = chrome.new_page(viewport={"width": width, "height": height})
    left: list[str] = []
    errors: list[str] = []

    def route(r):
        if r.request.url.startswith(LOCAL):
            r.continue_()
        else:
            left.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(viewer.as_uri(), wait_until="load")
    page.wait_for_function("() => window.tr && tr.importer && tr.importer.Import")
    return page, left, errors
