"""The event schema shared by the runner (writer), the supervisor (store) and every reader.

An event is one JSON object per line: ``{"type": ..., "run": ..., "t": unix seconds, ...}``.
Plain dicts keep the store greppable and the readers tolerant of fields they do not know.
Imports nothing from tuimon, and never torch or textual.
"""

from __future__ import annotations

import json
import time
from typing import Any

SCHEMA_VERSION = 1

# Written by the runner (child process).
RUN_STARTED = "run_started"  # pid, variant, device, device_name, torch, params, batch_size, ...;
#   fixes: [name] the tuimon try fixes it was asked to apply (tuimon/fixes.py; absent: none).
#   What came of each is a run note: a warning with note, fix (its name), applied (true / false),
#   text "fix NAME: what it did / why not" (runner/fixes.py; stats/apply.py folds them: a row's fixes)
PHASE = "phase"  # phase: building | compiling | warmup | steady | paused (resume: the phase before)
STEP = "step"  # i, t, ms, data_ms, n, loss, phase, compile_ms (when a compile ran in the step);
#   ph: where the step went, [data, forward, backward, optimizer] in µs (ints, STEP_PHASES' order;
#   "other" is the rest: ms - their sum); null for a phase the step could not see (its time is in
#   "other"); a fifth entry, eval, only in a step that ran the trained module with gradients off
#   (a script's eval forwards inside its step; absent: 0); no ph at all: a step whose split was
#   not measured (a profiler capture's); gap: 1, a script's step that held a validation pass
#   (kept out of the steady state; eval work that recurs step after step is no gap); mem: 1, a
#   step whose memory per phase was read (CUDA; kept out of the steady state: memory_phases)
MEMORY = "memory"  # peak_rss (process, so far); cuda_peak_allocated/_reserved (this window), bytes;
#   minflt: the process's minor page faults so far (sent after the steps flushed with it)
# Memory per phase on CUDA (runner/memory_phases.py), the latest holding every step measured:
#   steps [i], base (allocated as the step began), phases {forward|backward|optimizer|...: {peak,
#   end}} (bytes: the allocator's peak in the part, allocated as it ended), budget (reserved +
#   the device's free bytes), total (the device's); and once at a compiled run's end: graph_pool
#   (bytes torch's CUDA-graph pool reserves; 0 none; null: graph_pool_unread says why), graph_pool_used
MEMORY_PHASES = "memory_phases"
# Python's garbage collector in the steps (runner/gc_pauses.py), at steps 16, 32, 64, 128, 256, then
#   every 256 and at the end:
#   steps [first, end) the totals cover, collections, oldest (generation-2 ones), seconds paused
GC = "gc"
# collectives (a rank of an FSDP2 job on the CPU, runner/fsdp_waits.py): what, "fsdp"; steps
#   [first, end) they cover, as gc's windows; seconds {all_gather, reduce_scatter} the steps
#   spent inside FSDP's all-gathers (copy-in, collective, copy-out) and reduce-scatters, calls
#   {all_gather, reduce_scatter} how many
COLLECTIVES = "collectives"
FINISHED = "finished"  # reason: steps | duration | stopped | script ended; seconds, paused_s, compiles,
#   profile_s (time spent starting and finishing profiler captures, outside every step), ...;
#   a script's: compiles, compile_s, recompiles are training's, val_compiles, val_compile_s,
#   val_recompiles its validation passes' (runner/script/validation.py)
# (a queued run stopped before it started: no seconds; one killed after a stop: forced)
SCRIPT_ENDED = "script ended"  # a script run's finished reason: the script ended by itself, exit 0
FAILED = "failed"  # stage: build | step | crash, error, message, traceback, where; kind: exception |
#   oom-host | oom-cuda | signal | exit, what (one line for people); signal, tried_bytes, cuda_max_*;
#   in_compile: a compiled script variant's failure raised inside torch.compile's own code
COMPILE_PHASE = "compile_phase"  # phase (dynamo trace, inductor codegen, ...), compile_id, backward
COMPILE = "compile"  # one finished compile: compile_id, forward, frame, where, seconds, phases{dynamo,aot,
#   inductor,codegen} (each alone, s), graph_ops, guards, graph_breaks, recompile_reason,
#   fx/aot cache hits & misses, cache: cold | warm | none, failed, fail_reason
GRAPH_BREAK = "graph_break"  # compile_id, file, line, reason, detail
RECOMPILE = "recompile"  # compile_id, reasons: [str]; after_validation: training's first compile of
#   code only a validation pass had compiled (not a recompile of training's)
# A script's compile_phase, compile, graph_break and recompile outside training say validation:
#   true (kept apart from training's) and outside: validation (a validation pass) | no_grad (the
#   model called with gradients off: sampling, generation, a rollout; runner/script/validation.py).
# A script's warning note may say uncompiled: why its compiled variant compiles nothing.
CUDAGRAPHS = "cudagraphs"  # torch's word on CUDA graphs (reduce-overhead): kind skipped | rerecorded, text
# One cache lookup torch reported while compiling (warm start, docs/compile.md#warm-start):
#   compile_id, cache: fx | aot, state: hit | miss | bypass, key, reason (a bypass's), saved_s (a
#   hit's compile time saved), parts {component: hash} of the key (the graph, each input's dtype
#   and shape as "brief", torch version, system, ...; inductor_config[...] entries once a process
#   and whenever they change: config_parts), briefs {component: short value}
CACHE_LOOKUP = "cache_lookup"

# One step's FLOPs, counted once per run on an extra step outside the measured ones and undone
# after (runner/flops.py): forward, backward, optimizer, step (FLOPs, ints; a phase torch's
# FlopCounterMode has no formula for counts 0; optimizer null without one), precision (the one
# most FLOPs ran in: fp32 | tf32 | bf16 | fp16 | fp8), dtypes {dtype: FLOPs}, ops {op: FLOPs} (the
# top ones), calls (the module's training calls a step: forward and backward are multiplied by
# them), backed (those a backward reached: the others count a forward alone), shapes (the kinds
# of call, by their arguments' shapes, counted apart), uncounted [module] (a script's modules
# other optimizers train outside the counted one: no FLOP/s or MFU then), counted_on "eager" (a
# compiled variant's eager module), seconds (the count's cost);
# peak: the measured GEMM peak of this machine (runner/peak_bench.py) {peaks {dtype: FLOP/s},
# key, cached, measured_at, seconds, threads, per_thread, all_threads} or null; error: why
# nothing was counted (then no counts), peak_error: why no peak.
FLOPS = "flops"

# Written by the supervisor (parent process).
SESSION_STARTED = "session_started"
RUN_QUEUED = "run_queued"  # mode, precision; replaces: the run whose place it takes (a restart);
#   replicate, repeats: with --repeats, which round of how many; a compiled run's start: cold (a
#   fresh, empty cache) | warm (seeded from compile artifacts: seed, its run or session) |
#   persistent (--cache-dir / --warm-cache: the user's own cache, cold or warm as torch says)
RUN_EXITED = "run_exited"  # returncode, seconds
# What a script printed of its own steps, read from its log at its exit (control/printed.py):
#   losses [[step, loss], ...], ms [[step, ms], ...] (each as the script numbers its steps); a
#   script printing several losses a line: losses_by {name: [[step, loss], ...]} instead of losses
PRINTED = "printed"
# A compiled run's compile artifacts (control/warm.py, runner/warm_start.py), by the supervisor or
# the runner: action seeded (its fresh cache filled from: seed {run | session, path}, kind dir |
#   bundle, bytes, files, seconds) | loaded (the bundle read into torch: bytes, entries, seconds) |
#   saved (the runner's bundle: bytes, entries; or text when torch has none) | kept (its cache
#   directory kept in the session: dir_bytes, files, bundle_bytes) | unusable (text: one line; the
#   run compiles cold)
ARTIFACTS = "artifacts"
# --cache-from SESSION: what the runs start from, recorded once at the session's start: session
#   (its name), path, meta {torch, triton, python, platform, host, cpus, recipe, recipe_sha, set,
#   ...}, runs {run: {mode, precision, axes, device_name, params, batch_size, image_size, extra,
#   lookups: [cache_lookup fields]}}
CACHE_SOURCE = "cache_source"
SESSION_ENDED = "session_ended"  # status: done | failed | interrupted
# --until-known (control/until_known.py; analysis/stats/known.py decides), session-wide, action:
#   design (the rounds the budget allows: max_rounds, set after round 2: stats/sequential.py);
#   progress (live: known {Known's fields: what is missing, the estimated seconds to an answer});
#   look (after a round: known, the look's code and figures); end (known, with stopped: known |
#   budget | failed | user | max_rounds: why the session stopped). session_started's until_known
#   holds the design (margin, max_rounds, min_rounds, alpha, spending) and budget_s.
KNOWN = "known"
SAMPLE = "sample"  # system, runs: {run: cpu_percent, rss, descendants, gpu_mem, sm_util, gpus}, devices
#   and stepping: the runs that stepped through the whole period (the supervisor's samples);
#   system's energy_uj: the CPU packages' energy (RAPL, probes/rapl.py), devices' energy_mj NVML's
# A device's throttle_reasons that are settings or rest, not a slowdown: "idle" is a GPU with
# nothing to do, the *_setting ones are clocks someone chose on purpose.
BENIGN_THROTTLE = frozenset({"idle", "applications_clocks_setting", "display_clocks_setting"})
PROBE_INFO = "probe_info"  # gpu_available, reason, devices, rapl (why RAPL's CPU energy cannot
#   be read; null: it can, the samples' system has energy_uj); or unsupported: [metric] (said once)
WARNING = "warning"  # text (run-tagged, or session-wide without run): throttling, memory, CPU share
# A user's command, recorded when the supervisor applied it, before its effects:
#   action: pause | resume | stop (run-tagged);
#   add (run: the new run; mode, precision, replaces when given);
#   restart (run: the old run; new_run, mode, precision of the new one);
#   stop_all | close (session-wide, no run).
CONTROL = "control"
# Written by the runner: a torch.profiler capture (runner/profiling/), emitted at once:
#   state "started": capture (1, 2, ... per run), source (control | profile_at | auto), window {wait,
#     warmup, active}, backward (false | true | "all"), first_step, active_steps [first, last],
#     module_spans, notes -- the UI shows "profiling..." until that capture's next event;
#   state "done": capture, source, window, backward, first_step, recorded_steps, active_steps
#     (the steps really recorded), partial, activities, steps_recorded, step_ms, split {data_ms,
#     forward_ms, backward_ms, optimizer_ms, other_ms, step_ms}, top_ops (by CPU self time) and,
#     on a GPU, top_device_ops (device time by launching op) and top_kernels: each [{name, calls,
#     self_ms, total_ms, share}], top 30; modules [{name, forward_ms, backward_ms}], syncs [{op,
#     kind: scalar_read | device_sync | blocking_copy, where, phase, module, via, context, count,
#     ms, ours}], sync_count (not ours), compiled_graphs {calls, graphs, ms, forward_ms,
#     backward_ms, optimizer_ms} (calls of compiled graphs and the host time inside them, per
#     step), device_busy_ms (on a GPU: time the device ran anything, per step), trace (chrome
#     trace path or null; none for source auto), trace_bytes, cost
#     {events, events_s, build_s, export_s}, compiles, notes. Times and counts are per step
#     (means over the active steps); share is of the mean step;
#   state "failed": capture, error, notes (nothing was recorded; the run goes on).
# The steps the profiler recorded carry profiled: <capture> in their step event; they are kept
# out of the steady state, like warm-up. The request itself is a control event, action profile
# (run-tagged; options when given).
PROFILE = "profile"
# A script run's files, kept apart per variant (runner/script/files.py, control/files.py):
#   file_written (runner, run-tagged): path (absolute), existed -- a write the run could not keep
#     in its own directory (outside the working directory), said once per path;
#   files (supervisor, run-tagged, at the run's exit): dir (the run's working directory in the
#     session), files [{path, bytes}] (the largest first, at most 100), count, bytes, partial;
#   files_changed (supervisor, session-wide, at the session's end): dirs (the user's directories
#     watched), changes [{path, change: added | changed | removed}] (at most 100), count.
# A compiled run's model (runner, run-tagged; a recipe's after its run_started, a script's at each
#   module it or tuimon compiles): repeated {model, block, count} (count 0, block null: no
#   repeated block), text (one line). What tuimon try's regional needs (stats/apply.py: a row's
#   repeated); not a note: no view lists it.
MODEL = "model"
# How tuimon read a script's loop (runner/script/anatomy.py, run-tagged), said after its first
#   steps and again at its end (the last holds the run's counts): steps, ends_at (optimizer.step |
#   backward), inside (backward-ended steps all inside one optimizer step(): LBFGS's closure),
#   optimizers [{optimizer, params, steps, module, compiled, lead, every (the lead's steps a step of
#   this one, over its span), span [first, last] (the lead's steps it stepped in first and last),
#   per_step {"2": steps, ...} (its step() calls in each of those)}] in the order made, backwards
#   {"1": steps, ...} (backward() calls a step), loss_sums {"1": steps, ...} (the backward() losses a
#   step's loss is the sum of: those before the lead's step()), outside {what the steps held: {steps:
#   [i, ...] (the first 12), count, gaps}} (a validation pass, eval inside a step, the trained module
#   with gradients off), trainings [{step, optimizer (its index in optimizers)}] (the first lead at
#   step 0, then each change: a second training, an idle lead taken over; the first 12), lead_changes,
#   epoch (the training DataLoader's batches an epoch; None: unsized)
ANATOMY = "anatomy"
FILE_WRITTEN = "file_written"
FILES = "files"
FILES_CHANGED = "files_changed"

PHASES = ("building", "compiling", "warmup", "steady", "paused")
# The parts of a step (a step event's ``ph``), and the name of the rest. "eval": the trained
# module's calls with gradients off inside a step (a script's); a step without any has a ph of four.
STEP_PHASES = ("data", "forward", "backward", "optimizer", "eval")
OTHER = "other"


def make(type_: str, run: str | None = None, **fields: Any) -> dict[str, Any]:
    event = {"type": type_, "t": round(time.time(), 6)}
    if run is not None:
        event["run"] = run
    event.update(fields)
    return event


def encode(event: dict[str, Any]) -> str:
    """One line of JSON, newline included. NaN/inf (a diverged loss) become null."""
    return json.dumps(_finite(event), separators=(",", ":"), allow_nan=False) + "\n"


def decode(line: str) -> dict[str, Any] | None:
    """Parse one line; None for a blank, torn or non-object line (the caller counts them)."""
    line = line.strip()
    if not line:
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and "type" in event else None


def _finite(event: dict[str, Any]) -> dict[str, Any]:
    for key, value in event.items():
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            event = {**event, key: None}
    return event
