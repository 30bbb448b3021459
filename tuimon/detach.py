"""The names ``tuimon.detach`` had before the CLI became a package (tests and scripts import
them from here). The code lives in ``tuimon/cli/``: ``detached`` (a session run by a daemon),
``attach`` and ``ls``. Nothing in tuimon imports this module, so it closes no import circle."""

from tuimon.cli.attach import attach_command, attach_parser, open_source, resolve_session
from tuimon.cli.detached import build_failure, print_detached, run_detached
from tuimon.cli.ls import ls_command, ls_parser, viewers

__all__ = ["attach_command", "attach_parser", "build_failure", "ls_command", "ls_parser",
           "open_source", "print_detached", "resolve_session", "run_detached", "viewers"]
