"""On-demand torch.profiler capture of a window of steps, and what the profiler pane shows.

A capture is asked for by a control line (``profile`` or ``profile {"active": 3, ...}``) or by
``--profile-at STEP``. It starts at the next step boundary and covers ``wait + warmup + active``
steps (torch.profiler's schedule, default 1 / 2 / 3): nothing is recorded in the wait steps, the
warm-up steps are recorded and thrown away, the active steps are kept. After the last active
step the profiler is stopped and dropped, hooks are removed, and the loop is back to its normal
code path: no profiler object, label or hook is alive outside a window.

While the profiler records (warm-up and active steps) the loop wraps the data fetch, forward,
backward, optimizer and its own loss read in ``record_function`` labels (``tuimon: forward``
...). Otherwise, wait steps included, the loop takes its plain path: the only cost is one
``is None`` check per step (a label costs ~4 µs even with no profiler running, so none is left
on). Recorded steps are marked ``profiled`` and kept out of the steady state.

Module spans. On an eager variant every block-level module (see ``block_modules``) gets forward
pre/post hooks that open a ``forward: NAME`` span, so a scalar read inside a submodule's forward
is named by the module. With backward attribution on, the same modules get
``register_full_backward_pre_hook`` / ``register_full_backward_hook`` opening ``backward: NAME``.
Blocks, not leaves: a full backward hook wraps the module's inputs and outputs in views, and an
in-place op on one of them (``ReLU(inplace=True)`` after the module, ``out += identity``) fails
with "Output 0 of BackwardHookFunction is a view and is being modified inplace". Modules that
look in-place are skipped; if a step still fails that way the backward hooks are removed, the
step is run again without them, and the capture says so.

Compiled variants get no module spans unless asked with ``backward: "all"``: Dynamo ignores
module hooks added after compilation (``skip_nnmodule_hook_guards``), and honouring them costs
graph breaks (``record_function`` in a hook breaks the graph; module backward hooks need compiled
autograd) and recompiles. The runner turns the hook guards on at start-up only when started with
``--profile-backward all``; the event's notes say what it cost (compiles inside the window).

Results are built once, after the window, at a step boundary (outside every timed step): top ops
by self time, the step split, per-module forward/backward time, and the sync findings, from
kineto's raw events (``light_events``: ~10x faster than torch's FunctionEvent list, which
``key_averages`` needs). Their cost is in the event (``cost``), and the chrome trace is written
next to the session's events.

One job a module: ``options`` (what a capture is asked for), ``labels`` (span names written and
read back), ``module_spans`` (which modules get spans, and their hooks), ``capture`` (one
window's lifecycle), ``profiler`` (requests and the open capture, for the loop), ``event_tree``
(kineto's events, nested) and ``analysis`` (the pane's tables). torch is imported inside the
functions that need it, as before the split: importing the package does not load torch.
"""

from tuimon.runner.profiling.analysis import analyse, find_syncs
from tuimon.runner.profiling.capture import Capture
from tuimon.runner.profiling.event_tree import Ev, light_events, link, nest, unlink
from tuimon.runner.profiling.module_spans import ModuleSpans, block_modules
from tuimon.runner.profiling.options import Options, parse_command
from tuimon.runner.profiling.profiler import Profiler

__all__ = ["Capture", "Ev", "ModuleSpans", "Options", "Profiler", "analyse", "block_modules",
           "find_syncs", "light_events", "link", "nest", "parse_command", "unlink"]
