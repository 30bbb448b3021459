"""Where the TUI's events come from: a supervisor on a thread of this process (LiveSource), a
detached session's daemon (RemoteSource: the file plus the control socket), a session
directory alone (ReplaySource, read-only), or several nodes' session directories of one
torchrun job (JobSource, read-only: merged as sessiondir/merge.py merges them)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from tuimon import events
from tuimon.sessiondir.store import EVENTS, unreadable_note

Deliver = Callable[[list[dict]], None]


def decode_lines(lines: list[str]) -> tuple[list[dict], int]:
    """(the events, how many non-blank lines did not decode). All lines in one JSON parse when
    they are whole (1.7x faster than one parse a line: a fast session writes thousands a
    second); line by line when one is not."""
    whole = [line for line in lines if line.strip()]
    try:
        parsed = json.loads("[" + ",".join(whole) + "]")
        if len(parsed) == len(whole) and all(isinstance(e, dict) and "type" in e for e in parsed):
            return parsed, 0
    except ValueError:
        pass
    batch = [e for line in whole if (e := events.decode(line)) is not None]
    return batch, len(whole) - len(batch)


class LiveSource:
    """Runs the supervisor on a thread of the UI process; keys become supervisor commands."""

    read_only = False

    def __init__(self, supervisor) -> None:
        self.supervisor = supervisor
        self.path: Path = supervisor.store.path
        self.status: str | None = None
        self._thread: threading.Thread | None = None

    def start(self, deliver: Deliver) -> None:
        self.supervisor.sink = deliver
        self._thread = threading.Thread(target=self._run, name="tuimon-supervisor", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self.status = self.supervisor.run(keep_open=True)

    def close(self, timeout: float = 30.0) -> None:
        """Stop every run (each at a step boundary), then end the supervisor."""
        self.supervisor.close()
        if self._thread is not None:
            self._thread.join(timeout)

    def log_path(self, run: str) -> Path:
        return self.supervisor.store.log_path(run)

    def __getattr__(self, name: str):
        # restart / pause / resume / stop / add go straight to the supervisor.
        if name in ("restart", "pause", "resume", "stop", "add", "profile", "dump"):
            return getattr(self.supervisor, name)
        raise AttributeError(name)


class _Following:
    """A read-only source: its ``_tail`` reads on a thread of its own, following while asked."""

    read_only = True
    thread = "tuimon-replay"

    def __init__(self, path: str | Path, follow: bool = True, poll: float = 0.25) -> None:
        self.path = Path(path)
        self.follow = follow
        self.poll = poll
        self._stop = threading.Event()

    def start(self, deliver: Deliver) -> None:
        threading.Thread(target=self._tail, args=(deliver,), name=self.thread, daemon=True).start()

    def _tail(self, deliver: Deliver) -> None:
        raise NotImplementedError  # each source reads its own way

    def close(self, timeout: float = 0) -> None:
        self._stop.set()

    def log_path(self, run: str) -> Path:
        return self.path / "logs" / f"{run}.log"


class ReplaySource(_Following):
    """Reads a session's events.jsonl, then follows it while it grows (a session still running).

    Lines that do not decode (a torn write, garbage) are skipped; once the first read reaches
    the end, a ``warning`` event with ``notify`` says how many (the app shows it), and again
    if more turn up later. A line still being written is not one of them."""

    def _tail(self, deliver: Deliver) -> None:
        rest = ""
        bad = said = 0
        with open(self.path / EVENTS, encoding="utf-8", errors="replace") as f:
            while not self._stop.is_set():
                chunk = f.read(1 << 20)
                if chunk:
                    lines = (rest + chunk).split("\n")
                    rest = lines.pop()  # a line still being written
                    batch, unread = decode_lines(lines)
                    bad += unread
                    if batch:
                        deliver(batch)
                    continue
                if not self.follow:
                    break
                if bad > said:  # following: say it once the first read is done, and on news
                    said = bad
                    deliver([self._note(bad)])
                self._stop.wait(self.poll)
        if rest.strip():
            e = events.decode(rest)
            bad += e is None
            if e is not None:
                deliver([e])
        if bad > said:
            deliver([self._note(bad)])

    @staticmethod
    def _note(bad: int) -> dict:
        return events.make(events.WARNING, text=unreadable_note(bad), notify="warning")


class RemoteSource:
    """A client of a detached session's daemon (control/daemon.py): events from the tail of
    events.jsonl, from its start (the full history); keys as commands over the session's
    control socket (control/channel.py). Connecting counts as attaching a viewer, which keeps a
    finished session open for new runs; ``detach()`` (or this process dying) lets it go."""

    read_only = False

    def __init__(self, path: str | Path, poll: float = 0.25) -> None:
        from tuimon.control import channel

        self.path = Path(path)
        self._client = channel.Client(self.path)  # ChannelError: no daemon listens there
        try:
            self.pid: int | None = self._client.call("attach").get("pid")
        except BaseException:
            self._client.close()
            raise
        self._tail = ReplaySource(self.path, follow=True, poll=poll)
        self.closed = False  # close() ended the session
        self.detached = False
        self.status: str | None = None
        self.error: str | None = None  # the daemon could not write the store (see _watch)
        self._done = threading.Event()

    def start(self, deliver: Deliver) -> None:
        self._tail.start(deliver)
        threading.Thread(target=self._watch, args=(deliver,), name="tuimon-remote-watch",
                         daemon=True).start()

    def _watch(self, deliver: Deliver, every: float = 0.5) -> None:
        """Ask the daemon whether its store failed: that news cannot come through the file."""
        from tuimon.control.channel import ChannelError, CommandError

        while not self._done.wait(every):
            try:
                error = self._client.call("hello").get("error")
            except (ChannelError, CommandError, OSError, ValueError, AttributeError):
                return  # the daemon is gone, or this source was closed
            if error:
                self.error = error
                deliver([events.make(events.WARNING, text=f"{error} — the runs are being stopped; "
                                     "what was written so far is kept", notify="error",
                                     store_error=error)])
                return

    def call(self, cmd: str, *args, **kwargs):
        """Any command of the channel's whitelist; ChannelError / CommandError on failure."""
        return self._client.call(cmd, *args, **kwargs)

    def restart(self, run: str, variant=None) -> str:
        return self.call("restart", run, *([variant] if variant is not None else []))

    def add(self, variant, replaces: str | None = None) -> str:
        return self.call("add", variant, *([replaces] if replaces is not None else []))

    def __getattr__(self, name: str):
        # pause / resume / stop / stop_all / states (and profile, ...) go over the socket.
        from tuimon.control.channel import COMMANDS

        if name in COMMANDS:
            return lambda *args, **kwargs: self.call(name, *args, **kwargs)
        raise AttributeError(name)

    def close(self, timeout: float = 60.0) -> None:
        """Stop every run and end the session; returns once the daemon has written the
        summary and exited (or after ``timeout``)."""
        from tuimon.control.channel import ChannelError, CommandError
        from tuimon.sessiondir.store import read_meta

        self.closed = True
        self._done.set()
        try:
            self._client.call("close")
            self._client.wait_closed(timeout)
        except (ChannelError, CommandError):
            pass  # the daemon is gone already
        finally:
            self._client.close()
            self._tail.close()
        self.status = read_meta(self.path).get("status")

    def detach(self) -> None:
        """Leave the runs going: drop the connection and stop following the file."""
        self.detached = True
        self._done.set()
        self._client.close()
        self._tail.close()

    log_path = _Following.log_path


class JobSource(_Following):
    """Several nodes' sessions of one torchrun job, read-only: what they hold now merged into one
    job (sessiondir/merge.py), then each file followed while it grows, its events made the merged
    session's the same way (``merge.node_event``). The CLI has checked they are one job."""

    thread = "tuimon-job-replay"

    def __init__(self, paths: Sequence[str | Path], follow: bool = True, poll: float = 0.25) -> None:
        self.paths = [Path(p) for p in paths]
        super().__init__(self.paths[0], follow, poll)

    def _tail(self, deliver: Deliver) -> None:
        from tuimon.sessiondir import merge, store

        files = [open(p / EVENTS, encoding="utf-8", errors="replace") for p in self.paths]  # noqa: SIM115
        try:
            rests = [""] * len(files)
            sessions = []
            for k, f in enumerate(files):
                evs, rests[k] = _lines(f.read(), "")
                sessions.append((self.paths[k], store.read_meta(self.paths[k]), evs))
            lead = merge.check(sessions)
            deliver(merge.merge(sessions)[1])
            while self.follow and not self._stop.wait(self.poll):
                for k, f in enumerate(files):
                    evs, rests[k] = _lines(f.read(1 << 20), rests[k])
                    batch = [x for x in (merge.node_event(e, k == lead) for e in evs) if x]
                    if batch:
                        deliver(batch)
        finally:
            for f in files:
                f.close()


def open_source(path: Path):
    """The TUI's source for one session, as attach and a browser tab open it: (RemoteSource,
    None) when the session's daemon answers; otherwise (ReplaySource, the note that says why it
    is read-only)."""
    from tuimon.control.channel import ChannelError, CommandError
    from tuimon.sessiondir import listing
    from tuimon.sessiondir import store as store_

    try:
        return RemoteSource(path), None
    except (ChannelError, CommandError):
        pass
    meta = store_.read_meta(path)
    state = listing.state_of(meta)
    if state == listing.RUNNING:
        note = (f"this session runs in pid {(meta.get('owner') or {}).get('pid')} without a control "
                "channel (headless): read-only, following it")
    elif state == listing.STALE:
        note = ("this session's supervisor is gone without finishing (killed?): read-only, "
                "showing what was recorded")
    else:
        note = f"this session has ended ({state}): read-only, as replay"
    return ReplaySource(path), note


def _lines(chunk: str, rest: str) -> tuple[list[dict], str]:
    """Whole lines' events from ``rest + chunk``, and the line still being written."""
    lines = (rest + chunk).split("\n")
    rest = lines.pop()
    return [e for e in (events.decode(x) for x in lines) if e is not None], rest
