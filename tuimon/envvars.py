"""The environment variables tuimon's two sides pass each other. Both the parent side (which
sets them) and the runner (which reads them) import this module, so it imports nothing from
tuimon and never anything heavy."""

# Set by the supervisor on each runner: a runner orphaned before it first looked still knows
# whose child it was (runner/orphan.py).
SUPERVISOR_PID = "TUIMON_SUPERVISOR_PID"
# warn | error, set by tests and bench (hidden): the runner checks that its own per-step work
# never syncs with the GPU (runner/syncdebug.py).
SYNC_DEBUG = "TUIMON_SYNC_DEBUG"
# Every run's settings (tuimon/settings.py), as JSON: read and removed by the recipe runner, or
# by the sitecustomize in runner/script/boot before a script runs (so the script's own child
# processes stay unhooked). torchrun's workers inherit it: a job's ranks find their channel there.
SETTINGS = "TUIMON_SETTINGS"
# Seconds before a script run says it has not stepped an optimizer (hidden; tests shorten it).
NO_STEP_S = "TUIMON_NO_STEP_S"
# Seconds a torchrun whose ranks here all ended may wait at its exit before tuimon ends it
# (control/job_runs.py EXIT_WAIT_S; hidden, tests shorten it).
EXIT_WAIT_S = "TUIMON_EXIT_WAIT_S"
# --pin-malloc, set by the supervisor in every run's environment (torchrun's workers inherit it):
# glibc's malloc thresholds fixed alike in every run. Blocks below 256 MiB come from the heap, and
# up to 1 GiB freed at its top stays with the process, so a step reuses its buffers rather than
# faulting them in again (analysis/stats/faults.py).
PIN_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(256 * 2**20), "MALLOC_TRIM_THRESHOLD_": str(2**30)}
# A compiled run's compile artifacts (warm start), as JSON: {"dir": its artifacts directory in the
# session, "save": keep torch's mega-cache bundle there, "load": a bundle to load before the first
# compile} (runner/warm_start.py; control/warm.py sets it). Ranks of a job inherit it; rank 0 saves.
ARTIFACTS = "TUIMON_ARTIFACTS"
# Where the measured GEMM peaks are kept (runner/peak_bench.py; default
# $XDG_CACHE_HOME/tuimon/peaks.json): tests point it at their own file, in a directory of its own
# (a script run's file routing leaves that directory alone: runner/script/files.py).
PEAK_CACHE = "TUIMON_PEAK_CACHE"
# The fd of the fork server's end of its socket to the supervisor (control/forkserver.py,
# runner/forkserver.py): set on the fork server alone, never on a run.
FORKSERVER_FD = "TUIMON_FORKSERVER_FD"
# 1: a recipe session forks its later runs from a fork server (opt-in for now; docs/measuring.md);
# otherwise every recipe run is its own `python -m tuimon.runner` process.
FORKSERVER = "TUIMON_FORKSERVER"
