"""What every command's arguments share: the one-line ``UsageError`` (exit 2, never a
traceback), a ``Parser`` that raises it, the ``LIMITS`` of every number a flag takes, and the
typed flags built on them. Imports nothing from the commands, so each of them may import it."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

DEFAULT_OUT = "tuimon-sessions"  # where sessions go, and where attach and ls look
DEFAULT_CACHE = Path.home() / ".cache" / "tuimon" / "inductor"  # --warm-cache; doctor reports it


class UsageError(Exception):
    """Bad input: printed as one line, exit 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse prints usage + message; we want one line
        raise UsageError(message)


# Every number a flag takes, in one place: flag -> (type, lowest, highest, unit). Out of range is
# bad input (exit 2) and the message gives the range. The highs are far past any real session
# and low enough to catch a typo (an extra zero or three) before anything is launched.
DAY = 86400
LIMITS: dict[str, tuple[type, float, float, str]] = {
    "steps": (int, 1, 10**9, ""),
    "repeats": (int, 1, 20, ""),
    "nproc": (int, 1, 1024, ""),
    "duration": (float, 0.1, 30 * DAY, " s"),
    "warmup": (int, 0, 10**9, ""),
    "batch-size": (int, 1, 1_000_000, ""),
    "image-size": (int, 1, 16384, ""),
    "seed": (int, 0, 2**32 - 1, ""),  # numpy's seed range (torch takes more)
    "turn-steps": (int, 1, 10**9, ""),
    "turn": (float, 0.1, 3600, " s"),
    "interval": (float, 0.2, 3600, " s"),  # below 0.2 s the probes cost more than they tell
    "hang-timeout": (float, 1, 30 * DAY, " s"),
    "profile-at": (int, 0, 10**9, ""),
    "fps": (float, 1, 30, ""),
    "port": (int, 0, 65535, ""),  # tuimon serve; 0: any free port
    "loss-tolerance": (float, 0, 100, ""),
    "budget": (float, 10, 30 * DAY, " s"),
    "margin": (float, 0.1, 50, " %"),
    "horizon": (float, 1, 10**12, " steps"),
    "horizon-time": (float, 1, 365 * DAY, " s"),
}


def _fmt(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def limited(flag: str):
    """The argparse type of a numeric flag, checked against LIMITS[flag]."""
    kind, low, high, unit = LIMITS[flag]

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not low <= value <= high:  # NaN fails this too
            raise argparse.ArgumentTypeError(
                f"must be between {_fmt(low)} and {_fmt(high)}{unit}, got {text}")
        return value

    parse.__name__ = flag  # argparse names the type in some messages
    return parse


def warmup_arg(text: str) -> str:
    """'auto' (found in the data) or a fixed number of steps, kept as text for the runner."""
    if text == "auto":
        return text
    return str(limited("warmup")(text))


fps_arg = limited("fps")


def device_arg(text: str) -> str:
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", text):
        raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda or cuda:N, got {text!r}")
    return text


def key_value(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][\w.-]*=.*", text):
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return text


def window_arg(text: str) -> tuple[int, int, int]:
    """--profile-window ``"1,2,3"`` -> (wait, warmup, active): the one parse of it (the runs'
    settings hold the numbers, tuimon/settings.py)."""
    try:
        wait, warmup, active = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected WAIT,WARMUP,ACTIVE (three whole numbers), got {text!r}") from None
    if wait < 0 or warmup < 0 or active < 1:
        raise argparse.ArgumentTypeError(f"expected WAIT >= 0, WARMUP >= 0 and ACTIVE >= 1, got {text!r}")
    return wait, warmup, active


UNITS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": DAY}
SPAN = re.compile(r"(\d+(?:\.\d+)?)\s*(sec|s|min|m|h|d)")


def seconds_of(text: str) -> float | None:
    """'20m', '1h30m', '90s', '1.5h', '2d' -> seconds; None when it is not a length of time."""
    compact = text.strip().lower().replace(" ", "")
    parts = SPAN.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        return None
    return sum(float(n) * UNITS[u] for n, u in parts)


def budget_arg(text: str) -> float:
    """--budget: a length of time ('20m', '1h30m'); a bare number is seconds."""
    seconds = seconds_of(text)
    if seconds is None:
        try:
            seconds = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a length of time such as 20m, 1h30m or 600 (seconds), got {text!r}") from None
    return limited("budget")(repr(seconds))


def horizon_arg(text: str) -> dict:
    """--horizon: how long the training run really is: steps ('50000') or time ('2h', '90m')."""
    seconds = seconds_of(text)
    if seconds is not None:
        return {"seconds": limited("horizon-time")(repr(seconds))}
    try:
        steps = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected steps (50000) or a length of time (2h, 90m, 1h30m), got {text!r}") from None
    return {"steps": int(limited("horizon")(str(steps)))}
