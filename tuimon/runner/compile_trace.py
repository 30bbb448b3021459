"""Live compile introspection from torch's structured trace (the data tlparse reads).

A ``logging.Handler`` on the ``torch.__trace`` logger receives, while torch compiles:
chromium B/E events (which phase is running), per-compile metrics (phase times, graph and guard
counts, cache hits), and artifacts for graph breaks and recompile reasons. It turns them into
tuimon events. Torch only builds these records while it compiles, so steady-state steps pay
nothing; what listening adds to a compile is measured in bench/compile_listen_cost.py.

In a script's run, ``validation`` (set by runner/script/) says whether a compile belongs to a
validation pass: its events then say ``validation: true``. A training compile of a frame that
only a validation pass had compiled before (Lightning's sanity check runs before the first
step) is torch's recompile but training's first compile: its recompile event says
``after_validation: true``.

A frame Dynamo could not compile (``Unsupported: Attempted to wrap RNN, GRU, or LSTM``) runs
eager: its compile event says ``failed`` and ``graph: false``, and the graph breaks torch logged
while it tried are no breaks between graphs (there is none): they are held until the compile's
metrics and said only for a compile that made its graph. ``watch`` (runner/compile_watch.py)
hears what came of each frame compile, so the run's counts are of compiles that made a graph.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time

from tuimon import events
from tuimon.runner.cache_trace import CacheTrace

# Chromium event names -> the phase a user should see. Nested spans: the innermost known wins.
PHASES = {
    "entire_frame_compile": "dynamo",
    "bytecode_tracing": "dynamo trace",
    "backend_compile": "backend",
    "create_aot_dispatcher_function": "aot autograd",
    "aot_collect_metadata": "aot autograd",
    "aot_trace_joint_graph": "aot autograd",
    "min_cut_rematerialization_partition": "aot partition",
    "inductor_compile": "inductor lowering",
    "fx_codegen_and_compile": "inductor lowering",
    "code_gen": "inductor codegen",
    "compile_file": "C++/Triton compile",
    "async_compile.wait": "C++/Triton compile",
    "entire_backward_compile": "backward",
}
LOCATION = re.compile(r"Graph break in user code at (.+?):(\d+)")
# Artifacts torch logs as each graph is looked up in the FX-graph and AOTAutograd caches
# (fx_graph_cache_hit, aotautograd_cache_miss, ...). torch 2.10+ also counts them in the compile's
# metrics (inductor_fx_local_cache_*_count); torch 2.9 and older count them only here.
CACHE_ARTIFACT = re.compile(r"(fx_graph|aotautograd)_cache_(hit|miss)$")
TRACE_LOGGER = "torch.__trace"
# tuimon's own files: a frame compiled there is the frame tuimon wraps a module's call in
# (runner/script/compile_modes.py), named for the module: it has no place in the user's code.
OURS = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# torch 2.4's compile metrics: the same nested spans in seconds, under older names (AOTAutograd
# with Inductor is the backend's compile).
LEGACY_TIMES = {"duration_us": "entire_frame_compile_time_s",
                "dynamo_cumulative_compile_time_us": "entire_frame_compile_time_s",
                "aot_autograd_cumulative_compile_time_us": "backend_compile_time_s",
                "inductor_cumulative_compile_time_us": "inductor_compile_time_s",
                "inductor_code_gen_cumulative_compile_time_us": "code_gen_time_s"}


class TraceListener(logging.Handler):
    def __init__(self, emitter, watch=None) -> None:
        super().__init__(level=logging.DEBUG)
        self.emitter = emitter
        self.watch = watch  # a CompileWatch told what came of each frame compile
        self._breaks: list[tuple[str | None, dict]] = []  # the compile under way's, until its metrics
        self._stack: list[str] = []  # open known phases, outermost first
        self._shown: str | None = None
        self._said: tuple | None = None  # (phase, compile id) last emitted
        self._said_t = 0.0
        self._compile_id: str | None = None
        self.graph_breaks = 0
        self.recompiles = 0  # training's (a validation pass's are counted apart)
        self._kernels = 0  # C++ / Triton kernel compiles (compile_file spans) since the last compile
        self.caches = CacheTrace(emitter)  # cache lookups, for the reasons of a miss
        self._cache: dict[str, int] = {}  # cache artifacts since the last compile's metrics
        self._legacy_said = False
        self.val_recompiles = 0
        self.validation = None  # optional callable(compile_id) -> bool: a validation pass's
        # Frames (a compile id's first part) compiled by training, by a validation pass.
        self._trained: set[str] = set()
        self._validated: set[str] = set()

    def _validation(self, compile_id: str | None) -> dict:
        """``{"validation": True, "outside": kind}`` for a compile outside training (a validation
        pass's, or with gradients off: runner/script/validation.py), else nothing."""
        kind = self.validation(compile_id) if self.validation is not None else None
        return {"validation": True, "outside": kind} if kind else {}

    def install(self) -> None:
        logger = logging.getLogger(TRACE_LOGGER)
        logger.addHandler(self)
        logger.setLevel(logging.DEBUG)

    def emit(self, record: logging.LogRecord) -> None:  # never let a parse error hurt training
        with contextlib.suppress(Exception):
            self._handle(record)

    def _handle(self, record: logging.LogRecord) -> None:
        md = getattr(record, "metadata", None) or {}
        compile_id = _compile_id(md)
        if "chromium_event" in md:
            self._chromium(_json(getattr(record, "payload", None)), compile_id)
        elif "compilation_metrics" in md or "bwd_compilation_metrics" in md:
            forward = "compilation_metrics" in md
            self._metrics(md["compilation_metrics" if forward else "bwd_compilation_metrics"], forward)
        elif "artifact" in md:
            name = md["artifact"].get("name")
            payload = getattr(record, "payload", None) or ""
            if cache := CACHE_ARTIFACT.match(name or ""):
                key = f"{'fx' if cache.group(1) == 'fx_graph' else 'aot'}_cache_{cache.group(2)}"
                self._cache[key] = self._cache.get(key, 0) + 1
            if name == "dynamo_graph_break_reason":
                self._graph_break(payload, compile_id)
            elif name == "recompile_reasons":
                self._recompile(payload, compile_id)
            elif "_cache_" in (name or ""):  # every lookup with its key's parts (cache_trace.py)
                self.caches.lookup(name, payload, compile_id, self._validation(compile_id))

    def _chromium(self, ev: dict | None, compile_id: str | None) -> None:
        if not isinstance(ev, dict) or ev.get("name") not in PHASES:
            return
        phase = PHASES[ev["name"]]
        compile_id = (ev.get("args") or {}).get("compile_id") or compile_id
        if compile_id:
            self._compile_id = compile_id
        if ev.get("ph") == "B":
            self._stack.append(phase)
            if ev["name"] == "compile_file":  # a kernel the cache did not hold, compiled now
                self._kernels += 1
        elif ev.get("ph") == "E" and phase in self._stack:
            del self._stack[len(self._stack) - 1 - self._stack[::-1].index(phase)]
        shown = self._stack[-1] if self._stack else None
        said = (shown, self._compile_id)
        now = time.monotonic()
        # Codegen and the C++ compiler alternate many times a second: say a change at most 4x/s,
        # but a new compile at once.
        if shown is not None and said != self._said and (
                now - self._said_t >= 0.25 or self._said is None or said[1] != self._said[1]):
            self._said, self._said_t = said, now
            self.emitter.emit_now(events.COMPILE_PHASE, phase=shown, compile_id=self._compile_id,
                                  backward="backward" in self._stack,
                                  **self._validation(self._compile_id))

    def _metrics(self, m: dict, forward: bool) -> None:
        def s(key: str) -> float:
            if key not in m and key in LEGACY_TIMES:  # torch 2.4: the same spans, in seconds
                return m.get(LEGACY_TIMES[key]) or 0.0
            return (m.get(key) or 0) / 1e6

        if "duration_us" not in m and not self._legacy_said:
            self._legacy_said = True
            import torch

            self.emitter.emit_now(events.WARNING, note=True, text=(
                f"torch {torch.__version__} logs less of its compiles than tuimon reads: no live "
                "phases, backward compiles, graph-break reasons or cache hits in this run "
                "(newer torch releases do)"))
        total, dynamo, aot = s("duration_us"), s("dynamo_cumulative_compile_time_us"), s(
            "aot_autograd_cumulative_compile_time_us")
        inductor, codegen = s("inductor_cumulative_compile_time_us"), s(
            "inductor_code_gen_cumulative_compile_time_us")
        # The cumulative times nest (dynamo ⊃ aot ⊃ inductor ⊃ codegen): report each phase alone.
        phases = {"dynamo": max(0.0, dynamo - aot) if dynamo else 0.0,
                  "aot": max(0.0, aot - inductor) if aot else 0.0,
                  "inductor": max(0.0, inductor - codegen), "codegen": codegen}
        # The cache lookups of this compile: its metrics' counts, else (torch 2.9 and older) the
        # artifacts logged since the previous compile's metrics (compiles do not overlap).
        seen, self._cache = self._cache, {}

        def count(field: str, key: str) -> int:
            value = m.get(field)
            return (value if value is not None else seen.get(key)) or 0

        hits = count("inductor_fx_local_cache_hit_count", "fx_cache_hit")
        misses = count("inductor_fx_local_cache_miss_count", "fx_cache_miss")
        kernels, self._kernels = self._kernels, 0
        remote = {key: m[key] for key in ("inductor_fx_remote_cache_hit_count",
                                           "inductor_fx_remote_cache_miss_count",
                                           "aotautograd_remote_cache_hit_count",
                                           "aotautograd_remote_cache_miss_count") if m.get(key)}
        where = None
        compile_id = m.get("compile_id")
        validation = self._validation(compile_id)
        failed = m.get("fail_type")
        # A graph only where Dynamo compiled the frame and found tensor operations in it (a frame
        # of plain Python makes none); a backward compile is of a graph that exists.
        graph = not forward or (not failed and m.get("graph_op_count") != 0)
        if forward and compile_id:
            (self._validated if validation else self._trained).add(str(compile_id).split("/")[0])
        if m.get("co_filename") and not m["co_filename"].startswith(OURS):  # not tuimon's wrapper
            where = f"{m['co_filename']}:{m.get('co_firstlineno')}"
        fail_where = (f"{m['fail_user_frame_filename']}:{m.get('fail_user_frame_lineno')}"
                      if failed and m.get("fail_user_frame_filename") else None)
        reason = str(m.get("fail_reason") or "")
        if forward:
            self._said_breaks(compile_id, failed)
            if self.watch is not None:
                line = reason.strip().splitlines()[0] if reason.strip() else (failed or "")
                at = os.path.basename((fail_where or where or "?").rsplit(":", 1)[0])
                line_no = (fail_where or where or "?").rsplit(":", 1)[-1]
                self.watch.outcome(graph, bool(validation), fell_back=(
                    f"{m.get('co_name') or 'a frame'}() ({at}:{line_no}): {line}"[:300] if failed else None))
        self.emitter.emit_now(
            events.COMPILE, compile_id=compile_id, forward=forward,
            frame=m.get("co_name"), where=where, seconds=round(total, 4),
            phases={k: round(v, 4) for k, v in phases.items()},
            graph_ops=m.get("graph_op_count"), guards=m.get("guard_count"),
            graph_breaks=m.get("num_graph_breaks"), recompile_reason=m.get("recompile_reason"),
            fx_cache_hits=hits, fx_cache_misses=misses,
            aot_cache_hits=count("aotautograd_local_cache_hit_count", "aot_cache_hit"),
            aot_cache_misses=count("aotautograd_local_cache_miss_count", "aot_cache_miss"),
            cache="warm" if hits and not misses else ("cold" if misses else "none"),
            # Kernel compiles are known where torch times them (2.9 on; 2.4 says nothing of them).
            kernels=kernels if "triton_compile_time_us" in m else None,
            kernel_s=round(s("triton_compile_time_us"), 4) if "triton_compile_time_us" in m else None,
            remote={k.replace("_count", "").replace("inductor_", ""): v for k, v in remote.items()} or None,
            graph=graph, failed=failed, fail_reason=reason[:2000] or None, fail_where=fail_where,
            **validation)

    def _said_breaks(self, compile_id: str | None, failed: str | None) -> None:
        """The graph breaks held for a frame compile now over: said, unless the compile failed
        (then they were the failure's own steps, and the frame runs eager whole)."""
        held, self._breaks = self._breaks, []
        for break_id, fields in held:
            if failed and (compile_id is None or break_id in (None, compile_id)):
                continue
            self.graph_breaks += 1
            self.emitter.emit_now(events.GRAPH_BREAK, **fields)

    def _graph_break(self, payload: str, compile_id: str | None) -> None:
        lines = [line.strip() for line in str(payload).splitlines() if line.strip()]
        loc = LOCATION.search(lines[0]) if lines else None
        reason = next((line.split(":", 1)[1].strip() for line in lines
                       if line.startswith("Explanation:")), None)
        if reason is None:
            reason = next((line for line in lines if line.startswith("Graph Break Reason:")),
                          lines[1] if len(lines) > 1 else "")
            reason = reason.replace("Graph Break Reason:", "").strip()
        if len(self._breaks) < 64:  # said with the compile's metrics (``_said_breaks``)
            self._breaks.append((compile_id, dict(
                compile_id=compile_id, file=loc.group(1) if loc else None,
                line=int(loc.group(2)) if loc else None, reason=reason[:300],
                detail="\n".join(lines[:12])[:1500], **self._validation(compile_id))))

    def _recompile(self, payload: str, compile_id: str | None) -> None:
        reasons = _json(payload)
        if not isinstance(reasons, list):
            reasons = [str(payload)]
        fields = self._validation(compile_id)
        if fields:
            self.val_recompiles += 1
        elif compile_id and compile_id.split("/")[0] in self._validated - self._trained:
            fields = {"after_validation": True}  # the guards that failed were validation's
        else:
            self.recompiles += 1
        self.emitter.emit_now(events.RECOMPILE, compile_id=compile_id,
                              reasons=[str(r)[:300] for r in reasons][:5], **fields)


def _compile_id(md: dict) -> str | None:
    if md.get("frame_id") is None:
        return None
    return f"{md['frame_id']}/{md.get('frame_compile_id')}"


def _json(payload):
    if isinstance(payload, (dict, list)):
        return payload
    try:
        return json.loads(payload)
    except (TypeError, ValueError):
        return None
