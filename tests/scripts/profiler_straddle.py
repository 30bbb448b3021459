"""torch.profiler writes into freed memory when a span outlives the session it began in.

The minimal reproduction of the crash under capture (docs/profiler.md), torch alone: a
``record_function`` span begun while one ``torch.profiler`` session records and ended while the
next one records has its end time and thread written into the first session's event, which was
freed with that session (the thread-local exit callback does not check which session the span
began in). Each round below does that once; glibc or the kernel notices within a few rounds
(SIGSEGV, or ``free(): invalid next size``). With ``--closed`` each span ends before its session
stops, and every round passes.

    python profiler_straddle.py [--rounds N] [--closed]

Prints ``ok ROUNDS`` when it survives. On the 2-core CI VM (torch 2.14.1) it died with SIGSEGV
within 20 rounds, 5 runs of 5; ``--closed`` passed 200 rounds, 4 of 4 (bench/RESULTS.md,
2026-11-26).
"""

import argparse

import torch
from torch.profiler import ProfilerActivity, profile

parser = argparse.ArgumentParser()
parser.add_argument("--rounds", type=int, default=200)
parser.add_argument("--closed", action="store_true", help="end each span inside its session")
args = parser.parse_args()

x = torch.randn(64, 64)
for _ in range(args.rounds):
    first = profile(activities=[ProfilerActivity.CPU])
    first.__enter__()
    span = torch.autograd.profiler.record_function("outer")
    span.__enter__()  # begun under the first session: it points at an event of that session
    for _ in range(50):
        x = (x @ x).tanh()
    if args.closed:
        span.__exit__(None, None, None)
    first.__exit__(None, None, None)  # the first session stops; its events are freed
    del first
    second = profile(activities=[ProfilerActivity.CPU])
    second.__enter__()
    if not args.closed:
        span.__exit__(None, None, None)  # ended under the second: written into freed memory
    second.__exit__(None, None, None)
    del second
print("ok", args.rounds, flush=True)
