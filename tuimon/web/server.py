"""The web server of ``tuimon serve``: one page (page.py), textual-serve's static files, and a
websocket per browser tab, each driving a viewer process of its own (``tab.py``) through
textual-serve's ``AppService``. It listens on a socket the CLI already bound (a port in use is
one line there). SIGINT, SIGTERM or SIGHUP ask every tab to quit (its viewer detaches, the runs
go on), then kill any process of ours still there."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
from collections.abc import Callable
from pathlib import Path

import psutil
import textual_serve
from aiohttp import WSCloseCode, WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager

from tuimon.web import page, peers

STATIC = Path(textual_serve.__file__).resolve().parent / "static"
QUIT_WAIT = 10.0  # seconds the tabs get to quit on their own before they are killed


def _int(text: str | None, default: int, low: int = 10, high: int = 1000) -> int:
    try:
        return min(max(int(text or default), low), high)
    except ValueError:
        return default


class TabServer:
    def __init__(self, command: str, title: str, name: str, say: Callable[[str], None]) -> None:
        self.command = command  # a shell command line (AppService runs it through sh -c)
        self.html = page.render(title, name)
        self.say = say
        self.downloads = DownloadManager()
        self.tabs: dict[web.WebSocketResponse, asyncio.Task] = {}
        self.opened = 0
        self.refused: set[int | None] = set()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._same_user])
        app.add_routes([web.get("/", self.index), web.get("/ws", self.websocket),
                        web.static("/static", STATIC)])
        return app

    @web.middleware
    async def _same_user(self, request: web.Request, handler):
        """A loopback connection is answered only when it comes from our own uid (peers.py)."""
        transport = request.transport
        client = transport.get_extra_info("peername") if transport else None
        if transport and client and peers.is_loopback(client[0]):
            try:
                uid = peers.owner(client, transport.get_extra_info("sockname"))
            except peers.Unknown:  # not Linux: cannot tell
                uid = os.getuid()
            if uid != os.getuid():
                if uid not in self.refused:
                    self.refused.add(uid)
                    self.say(f"refused a connection from another user (uid {uid}) of this machine")
                raise web.HTTPForbidden(text="this tuimon serve belongs to another user\n")
        return await handler(request)

    async def index(self, request: web.Request) -> web.Response:
        return web.Response(text=self.html, content_type="text/html",
                            headers={"Cache-Control": "no-store"})

    async def websocket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(heartbeat=15)  # a vanished browser is noticed within ~30 s
        await ws.prepare(request)
        self.opened += 1
        number = self.opened
        task = asyncio.current_task()
        assert task is not None  # a request handler runs in its own task
        self.tabs[ws] = task

        async def close() -> None:  # AppService wants a close that returns nothing
            await ws.close()

        service = AppService(self.command, write_bytes=ws.send_bytes, write_str=ws.send_str,
                             close=close, download_manager=self.downloads)
        self.say(f"tab {number} opened from {request.remote} ({len(self.tabs)} open)")
        try:
            await service.start(_int(request.query.get("width"), 80),
                                _int(request.query.get("height"), 24))
            await self._relay(ws, service)
        finally:
            await self._end(service)
            del self.tabs[ws]
            self.say(f"tab {number} closed ({len(self.tabs)} open)")
        return ws

    @staticmethod
    async def _end(service: AppService) -> None:
        """Ask the tab's app to quit, wait for its process to end (reaped here, by asyncio), and
        kill it if it has not within QUIT_WAIT seconds."""
        process = getattr(service, "_process", None)  # textual-serve keeps it to itself
        with contextlib.suppress(asyncio.TimeoutError, ConnectionError):
            await asyncio.wait_for(service.stop(), QUIT_WAIT)  # waits for its output to end
        if process is None:
            return
        try:
            await asyncio.wait_for(process.wait(), QUIT_WAIT)
        except asyncio.TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()

    @staticmethod
    async def _relay(ws: web.WebSocketResponse, service: AppService) -> None:
        """The browser's messages (textual.js): keys, resizes, focus, pings."""
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                kind, *rest = json.loads(message.data)
            except (ValueError, TypeError):
                continue
            if kind == "stdin" and rest:
                await service.send_bytes(str(rest[0]).encode("utf-8"))
            elif kind == "resize" and rest and isinstance(rest[0], dict):
                await service.set_terminal_size(_int(rest[0].get("width"), 80),
                                                _int(rest[0].get("height"), 24))
            elif kind == "ping" and rest:
                await ws.send_json(["pong", rest[0]])
            elif kind == "blur":
                await service.blur()
            elif kind == "focus":
                await service.focus()

    async def serve(self, sock: socket.socket, stopped: asyncio.Event) -> int:
        """Serve until ``stopped`` is set; then close every tab. Returns how many tabs were open."""
        runner = web.AppRunner(self.app(), handle_signals=False, access_log=None)
        await runner.setup()
        await web.SockSite(runner, sock, shutdown_timeout=2).start()
        await stopped.wait()
        open_tabs = len(self.tabs)
        for ws in list(self.tabs):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(code=WSCloseCode.GOING_AWAY,
                                                message=b"tuimon serve stopped"), 2)
        if self.tabs:  # each handler ends once its viewer has quit
            await asyncio.wait(set(self.tabs.values()), timeout=2 * QUIT_WAIT + 1)
        await runner.cleanup()
        return open_tabs


def reap(timeout: float = 3.0) -> int:
    """Kill what is left of this process's children (a viewer that did not quit when asked):
    SIGTERM, then SIGKILL after ``timeout``. Returns how many there were."""
    children = psutil.Process().children(recursive=True)
    for child in children:
        with contextlib.suppress(psutil.Error):
            child.terminate()
    _, alive = psutil.wait_procs(children, timeout=timeout)
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(alive, timeout=timeout)
    return len(children)


def run(sock: socket.socket, command: str, title: str, name: str,
        say: Callable[[str], None]) -> tuple[int, int]:
    """Serve on ``sock`` until SIGINT / SIGTERM / SIGHUP. Returns (tabs open at the stop,
    processes that had to be killed)."""

    async def main() -> int:
        stopped = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, stopped.set)
        return await TabServer(command, title, name, say).serve(sock, stopped)

    open_tabs = asyncio.run(main())
    return open_tabs, reap()
