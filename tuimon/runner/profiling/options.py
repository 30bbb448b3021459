"""What a capture is asked for: the window (wait / warm-up / active steps) and backward
attribution, from the run's settings (``--profile-window``, parsed once by the CLI:
tuimon/settings.py) or a ``profile [JSON]`` control line. No torch here: the supervisor checks
the same options before it sends them."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tuimon.settings import PROFILE_WINDOW

OPTION_KEYS = ("wait", "warmup", "active", "backward")


@dataclass(frozen=True)
class Options:
    wait: int = PROFILE_WINDOW[0]
    warmup: int = PROFILE_WINDOW[1]
    active: int = PROFILE_WINDOW[2]
    backward: bool | str = False  # False; True: eager variants; "all": compiled ones too

    @property
    def steps(self) -> int:
        return self.wait + self.warmup + self.active

    def window(self) -> dict:
        return {"wait": self.wait, "warmup": self.warmup, "active": self.active}

    def merged(self, overrides: dict) -> Options:
        """These options with ``overrides`` (a control line's JSON) applied; ValueError if bad."""
        unknown = sorted(set(overrides) - set(OPTION_KEYS))
        if unknown:
            raise ValueError(f"unknown profile option(s): {', '.join(unknown)}")
        values = {**self.__dict__, **overrides}
        for key, low in (("wait", 0), ("warmup", 0), ("active", 1)):
            if not isinstance(values[key], int) or isinstance(values[key], bool) or values[key] < low:
                raise ValueError(f"profile option {key} must be a whole number >= {low}")
        if values["backward"] not in (True, False, "all", "eager"):
            raise ValueError("profile option backward must be true, false or \"all\"")
        if values["backward"] == "eager":
            values["backward"] = True
        return Options(**{k: values[k] for k in OPTION_KEYS})


def parse_command(line: str) -> dict | None:
    """The options of a ``profile [JSON]`` control line; None when the line is something else.

    Raises ValueError when the line is a profile command with unreadable options."""
    word, _, rest = line.partition(" ")
    if word != "profile":
        return None
    rest = rest.strip()
    if not rest:
        return {}
    try:
        options = json.loads(rest)
    except ValueError:
        raise ValueError(f"profile options are not JSON: {rest[:80]!r}") from None
    if not isinstance(options, dict):
        raise ValueError("profile options must be a JSON object")
    return options
