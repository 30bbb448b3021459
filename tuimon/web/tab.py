"""``python -m tuimon.web.tab SESSION_DIR [--fps N]``: what one browser tab of ``tuimon serve``
runs, under Textual's web driver: the TUI as ``tuimon attach`` opens it. It ends when the tab
closes, on ``q``, or when the server goes away without asking (the parent watch below), so no
viewer outlives its server and holds a finished session open."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading


def watch_parent(every: float = 0.5) -> None:
    """SIGTERM this process once its parent (the server) is gone: Textual's web driver turns
    SIGTERM into a clean exit of the app."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(every)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="tuimon-parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tuimon.web.tab")
    p.add_argument("session")
    p.add_argument("--fps", type=float, default=4.0)  # tuimon serve checked it (cli/serve.py)
    args = p.parse_args(argv)

    from tuimon.sessiondir import store
    from tuimon.ui.app import TuimonApp
    from tuimon.ui.sources import open_source

    if (why := store.check_session(args.session)) is not None:
        print(f"tuimon: error: {why}", file=sys.stderr)  # the server's console shows it
        return 2
    watch_parent()
    source, note = open_source(args.session)
    try:
        TuimonApp(source, fps=args.fps, note=note).run()
    finally:
        # Quit without stop (ctrl+q, the tab closed, the server stopping): leave the runs going.
        if not source.read_only and not source.closed and not source.detached:
            source.detach()
    return 0


if __name__ == "__main__":
    sys.exit(main())
