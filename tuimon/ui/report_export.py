"""The export key's report.html: ``tuimon report SESSION`` in a child process, waited on by a
thread, its one line shown as a notice. A child, not a call: a report takes seconds, which here
would hold the GIL against the redraws, and matplotlib stays out of the TUI's process
(tests/unit/test_import_rules.py). One report at a time."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

TIMEOUT_S = 600  # a report that takes longer is given up (the child is killed)


class ReportWriter:
    """Writes SESSION/report.html off the UI's thread; ``say(text, error)`` is called (from the
    waiting thread) with the child's one line once it is done."""

    def __init__(self, say: Callable[[str, bool], None]) -> None:
        self.say = say
        self._thread: threading.Thread | None = None

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, session: str | Path) -> bool:
        """Start writing; False when one is being written already."""
        if self.busy:
            return False
        self._thread = threading.Thread(target=self._run, args=(str(session),), name="tuimon-report",
                                        daemon=True)
        self._thread.start()
        return True

    def _run(self, session: str) -> None:
        cmd = [sys.executable, "-m", "tuimon", "report", session]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.say(f"report.html failed: {exc}", True)
            return
        out = (proc.stdout.strip() or proc.stderr.strip()).splitlines()
        line = out[-1] if out else f"tuimon report exited with {proc.returncode}"
        self.say(line.removeprefix("tuimon: ").removeprefix("error: "), proc.returncode != 0)
