"""``tuimon serve`` (issue 16) in a real headless browser: Debian's chromium driven by playwright
(tests/browser.py installs chromium with apt-get when it is missing; skipped, with the reason,
only when that cannot be done). Real processes throughout: a detached session's daemon and its
runners, the server, one viewer process per browser tab.

What the browser sees is read from xterm.js's own buffer (tests/browser.py EXPOSE) and checked
against a screenshot cell by cell (``drawn_like_buffer``), so the test knows the canvas shows the
panels, not just that bytes went by. Checks that need no browser (bad input, the printed lines)
are in tests/e2e/test_serve_cli.py."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import browser
import psutil
import pytest
from conftest import TEST_RECIPES, wait_for
from test_detach import gone, of_type

from tuimon.control import channel

ROOT = Path(__file__).resolve().parents[2]
SLOW = str(TEST_RECIPES / "slow_steps.py")
RUNS = ("eager-fp32", "eager-amp")
VIEWPORT = {"width": 1280, "height": 720}


# ---- the browser --------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def chromium() -> str:
    path, why = browser.find_chromium()
    if path is None:
        pytest.skip(why)
    return path


@pytest.fixture(scope="module")
def chrome(chromium):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")
    with sync_api.sync_playwright() as playwright:
        b = browser.launch(playwright, chromium)
        yield b
        b.close()


class Tab:
    """One browser tab on the server; every request it makes is recorded, and any that would
    leave this machine is refused (and then fails the test)."""

    def __init__(self, chrome, url: str) -> None:
        self.page = chrome.new_page(viewport=VIEWPORT)
        self.requests: list[str] = []
        self.page.route("**/*", self._route)
        self.page.on("websocket", lambda ws: self.requests.append(ws.url))
        self.page.add_init_script(browser.EXPOSE)
        self.page.goto(url)

    def _route(self, route) -> None:
        self.requests.append(route.request.url)
        if re.match(r"(http|ws)://127\.0\.0\.1:\d+/", route.request.url):
            route.continue_()
        else:
            route.abort()

    def text(self) -> str:
        return browser.text(self.page)

    def until(self, predicate, what: str, timeout: float = 60.0):
        deadline = time.monotonic() + timeout
        while not (value := predicate()):
            assert time.monotonic() < deadline, f"timed out waiting for {what}; the screen:\n{self.text()}"
            self.page.wait_for_timeout(100)  # lets playwright handle the page's events meanwhile
        return value

    def shows(self, *words: str, timeout: float = 60.0) -> str:
        return self.until(lambda: (t := self.text()) and all(w in t for w in words) and t,
                          f"{words} on the screen", timeout)

    def press(self, key: str) -> None:
        self.page.focus(".xterm-helper-textarea")  # where xterm.js takes its keys
        self.page.keyboard.press(key)

    def closed(self) -> bool:
        """The server closed this tab's websocket (its viewer ended)."""
        return "-closed" in (self.page.evaluate("document.body.className") or "")


# ---- the server ---------------------------------------------------------------------------------
@pytest.fixture
def serve(tmp_path):
    started: list[browser.Served] = []

    def start(*args: str) -> browser.Served:
        started.append(browser.Served(*args, cwd=tmp_path))
        return started[-1]

    yield start
    for served in started:  # a failed test's server (and its tabs)
        if served.proc.poll() is None:
            served.kill()


def controls(session: Path) -> list[tuple[str, str | None]]:
    return [(e["action"], e.get("run")) for e in of_type(session, "control")]


def attached(session: Path) -> int:
    return channel.request(session, "hello")["attached"]


def running(session: Path) -> bool:
    states = channel.request(session, "hello")["states"]
    return all(states.get(run) in ("running", "paused") for run in RUNS)


# ---- a live session in the browser --------------------------------------------------------------
def test_live_session_in_the_browser(tuimon, serve, chrome, tmp_path, reaper):
    started = time.monotonic()
    proc, session = tuimon(SLOW, "--modes", "eager", "--precision", "fp32,amp", "--steps", "100000",
                           "--set", "sleep_ms=20", "--warmup", "0", "--interval", "0.5",
                           "--schedule", "parallel", "--detach")
    assert proc.returncode == 0, proc.stderr
    # No SESSION: the latest running one under --out.
    server = serve("--out", str(session.parent))
    assert f"session: {session.resolve()}" in server.output
    assert "running: each tab is a live viewer" in server.output
    assert f"ssh -L {server.port}:127.0.0.1:{server.port} " in server.output
    # It listens on loopback only.
    listening = [c.laddr for c in psutil.Process(server.proc.pid).net_connections("inet")
                 if c.status == psutil.CONN_LISTEN]
    assert listening and all(addr.ip == "127.0.0.1" for addr in listening), listening

    # The page: titled with the session, both panels drawn, and nothing fetched from elsewhere.
    a = Tab(chrome, server.url)
    assert a.page.title() == f"{session.name} · tuimon"
    a.shows("eager/fp32", "eager/amp", f"{session.name} · live", "steps")
    a.page.wait_for_timeout(500)  # one more redraw reaches the canvas
    grid = browser.cells(a.page)
    shot = tmp_path / "browser.png"
    a.page.screenshot(path=str(shot))
    inked, plain = browser.drawn_like_buffer(shot, grid)
    assert inked > 0.97 and plain > 0.97, (inked, plain)
    assert grid["cols"] > 100 and len(grid["rows"]) > 25  # the page's size, not 80x24
    assert all(re.match(rf"(http|ws)://127\.0\.0\.1:{server.port}/", url) for url in a.requests), a.requests

    # A key typed in the browser pauses the focused run, through the daemon.
    a.press("Space")
    paused = wait_for(lambda: next((run for action, run in controls(session) if action == "pause"), None),
                      30, "the pause in events.jsonl")
    assert paused in RUNS
    wait_for(lambda: any(e.get("run") == paused and e.get("phase") == "paused"
                         for e in of_type(session, "phase")), 30, "the run to pause")
    a.shows("paused")

    # A second tab at once: a viewer of its own; q asks stop / detach, d detaches it alone.
    b = Tab(chrome, server.url)
    b.shows("eager/fp32", "eager/amp")
    assert len(server.tabs()) == 2 and attached(session) == 2
    b.press("q")
    b.shows("detach", "reload this page")  # a browser's way back, not `tuimon attach`
    b.press("d")
    b.until(b.closed, "the page to say the viewer ended")
    wait_for(lambda: len(server.tabs()) == 1 and attached(session) == 1, 30, "tab B's viewer to end")
    assert running(session)  # detach left the runs going

    # Closing a tab ends its viewer; the runs go on.
    viewer = server.tabs()[0].pid
    a.page.close()
    wait_for(lambda: gone([viewer]) and attached(session) == 0, 30, "tab A's viewer to end")
    assert running(session)

    # Ctrl-C with a tab open: the server and every viewer end, exit 0; the runs go on.
    c = Tab(chrome, server.url)
    c.shows("eager/fp32")
    viewers = [p.pid for p in server.tabs()]
    assert viewers
    assert server.ctrl_c() == 0, server.output
    assert gone(viewers)
    here = str(session.resolve())
    assert not [p for p in psutil.process_iter(["cmdline"])
                if "tuimon.web.tab" in (p.info["cmdline"] or []) and here in p.info["cmdline"]]
    assert f"stopped (1 tab closed); the runs go on: tuimon attach {here}" in server.output
    c.until(c.closed, "the page to say the viewer ended")
    c.page.close()
    assert running(session) and attached(session) == 0

    # The session ends while a tab is open (another viewer's stop): the tab says so and stays;
    # q then just leaves.
    again = serve(str(session))
    d = Tab(chrome, again.url)
    d.shows("eager/fp32")
    channel.request(session, "close")
    d.shows("session has ended", timeout=90)
    d.press("q")
    d.until(d.closed, "the viewer to end")
    wait_for(lambda: not again.tabs(), 30, "the viewer process to end")
    # Its process gone is not yet the server's tab closed (asyncio reaps it, then the tab's
    # handler ends): a Ctrl-C between the two counted the tab as open (seen once in CI-like runs).
    wait_for(lambda: "tab 1 closed (0 open)" in again.output, 30, "the server to close the tab")
    assert again.ctrl_c() == 0
    assert again.output.endswith("stopped (0 tabs closed)"), again.output
    d.page.close()
    print(f"live browser test: {time.monotonic() - started:.1f} s")


# ---- a finished session: read-only ----------------------------------------------------------------
def test_finished_session_is_a_read_only_replay(serve, chrome, tmp_path):
    session = Path(shutil.copytree(ROOT / "tests/data/session_tiny_mlp", tmp_path / "session_tiny_mlp"))
    before = {p.name: p.read_bytes() for p in session.iterdir() if p.is_file()}
    server = serve(str(session))
    assert "done: each tab is a read-only replay" in server.output
    # Reached through a tunnel on another local port, as from a laptop: every URL the page uses
    # (the websocket's too) follows the address the browser used.
    tunnel = browser.Forward(server.port)
    tab = Tab(chrome, f"http://127.0.0.1:{tunnel.port}/")
    screen = tab.shows("session_tiny_mlp · ", "eager/fp32", "default/fp32")
    assert "live" not in screen.splitlines()[0]
    for key in ("Space", "r", "n", "x"):  # keys that change runs do nothing here
        tab.press(key)
    tab.page.wait_for_timeout(500)
    tab.press("q")  # read-only: quits at once, no question
    tab.until(tab.closed, "the viewer to end")
    wait_for(lambda: not server.tabs(), 30, "the viewer process to end")
    assert {p.name: p.read_bytes() for p in session.iterdir() if p.is_file()} == before
    assert any(url.startswith("ws://") for url in tab.requests), tab.requests
    assert all(re.match(rf"(http|ws)://127\.0\.0\.1:{tunnel.port}/", url)
                                    for url in tab.requests), tab.requests
    assert server.ctrl_c() == 0
    tab.page.close()
    tunnel.close()
