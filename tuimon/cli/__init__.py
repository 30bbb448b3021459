"""Command line: ``tuimon [RECIPE] [options]`` runs a session, ``tuimon run [options] -- python
train.py`` one of the user's own script; ``tuimon summary DIR`` exports;
``sweep`` races every mode and precision for a verdict; ``compare`` diffs sessions; ``report``
writes a session's report.html (its figures drawn with matplotlib, imported only then); ``export``
a session as a Perfetto trace or TensorBoard runs; ``replay``,
``attach`` and ``ls`` open and list sessions; ``serve`` puts the TUI in a browser; ``doctor``
reports the machine.

Every input is checked before anything is launched; a bad one gets one line on stderr and
exit code 2, never a traceback. One module a command (run, script, summary, replay, attach, ls,
doctor), their shared arguments in ``args``; a command's heavy imports (rich, the TUI, the supervisor) wait
until it runs, so ``--help`` stays fast and torch-free.
"""

from __future__ import annotations

import sys

from tuimon.cli.args import UsageError
from tuimon.cli.replay import replay_command, replay_parser
from tuimon.cli.run import run_command
from tuimon.cli.run_flags import run_parser
from tuimon.cli.script import split_run
from tuimon.cli.summary import summary_command, summary_parser
from tuimon.exit_codes import EXIT_USAGE

__all__ = ["main", "replay_parser", "run_parser", "summary_parser"]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["summary"]:
            return summary_command(summary_parser().parse_args(argv[1:]))
        if argv[:1] == ["replay"]:
            return replay_command(replay_parser().parse_args(argv[1:]))
        if argv[:1] == ["attach"]:
            from tuimon.cli import attach

            return attach.attach_command(attach.attach_parser().parse_args(argv[1:]))
        if argv[:1] == ["run"]:  # tuimon run [options] -- python train.py ...
            options, command = split_run(argv[1:])
            return run_command(run_parser().parse_args(options), argv, command)
        if argv[:1] == ["sweep"]:  # tuimon sweep RECIPE | tuimon sweep [options] -- CMD
            from tuimon.cli import sweep

            options, command = split_run(argv[1:])
            return sweep.sweep_command(sweep.sweep_parser().parse_args(options), argv, command)
        if argv[:1] == ["try"]:  # tuimon try SESSION: race the fixes its findings call for
            from tuimon.cli import try_fixes

            return try_fixes.try_command(try_fixes.try_parser().parse_args(argv[1:]))
        if argv[:1] == ["doctor"]:
            from tuimon.cli import doctor

            return doctor.doctor_command(doctor.doctor_parser().parse_args(argv[1:]))
        if argv[:1] == ["serve"]:
            from tuimon.cli import serve

            return serve.serve_command(serve.serve_parser().parse_args(argv[1:]))
        if argv[:1] == ["compare"]:
            from tuimon.cli import compare

            return compare.compare_command(compare.compare_parser().parse_args(argv[1:]))
        if argv[:1] == ["report"]:  # tuimon report SESSION [--png]: SESSION/report.html
            from tuimon.cli import report

            return report.report_command(report.report_parser().parse_args(argv[1:]))
        if argv[:1] == ["export"]:  # tuimon export SESSION --trace F.json --tensorboard DIR
            from tuimon.cli import export

            return export.export_command(export.export_parser().parse_args(argv[1:]))
        if argv[:1] == ["ls"]:
            from tuimon.cli import ls

            return ls.ls_command(ls.ls_parser().parse_args(argv[1:]))
        return run_command(run_parser().parse_args(argv), argv)
    except UsageError as exc:
        print(f"tuimon: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
