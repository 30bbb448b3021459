"""Test recipe: fails in one precision only, at step --set at=N (default 3), in the way --set how=
says, so one session has a failing variant and a healthy sibling.

how: abort (os.abort()), segv (a NULL read through ctypes), rlimit (an address-space limit just
above the current size, then a big tensor), memoryerror (the same limit, then a big bytearray),
cuda_oom (torch.OutOfMemoryError raised by hand, as the CUDA allocator words it), hang (sleeps
for an hour). fail_in=fp32 (default: the first variant of a sequential session) or amp.
"""

import ctypes
import os
import resource
import time

import torch

from tuimon.recipe import Recipe

LIMIT_ABOVE = 256 * 2**20  # bytes of address space left: room for the traceback, not for 8 GiB


def vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def fail(how: str) -> None:
    print(f"failing now: {how}", flush=True)
    if how == "abort":
        os.abort()
    elif how == "segv":
        ctypes.string_at(0)
    elif how in ("rlimit", "memoryerror"):
        resource.setrlimit(resource.RLIMIT_AS, (vm_size() + LIMIT_ABOVE, resource.RLIM_INFINITY))
        if how == "rlimit":
            torch.empty(2**31, dtype=torch.float32)  # 8 GiB
        else:
            bytearray(2**33)
    elif how == "cuda_oom":
        raise torch.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB "
            "of which 1.06 GiB is free. Of the allocated memory 75.20 GiB is allocated by PyTorch")
    elif how == "hang":
        time.sleep(3600)
    else:
        raise ValueError(f"unknown how={how!r}")


def build(cfg):
    how, at = cfg.extra.get("how", "abort"), int(cfg.extra.get("at", "3"))
    fail_in = cfg.extra.get("fail_in", "fp32")
    model = torch.nn.Linear(8, 2)
    calls = {"n": 0}

    def forward_loss(m, x, y):
        calls["n"] += 1
        amp = torch.is_autocast_enabled(x.device.type)
        if calls["n"] > at and amp == (fail_in == "amp"):
            fail(how)
        return torch.nn.functional.cross_entropy(m(x), y)

    batches = [(torch.randn(4, 8), torch.randint(0, 2, (4,)))]
    return Recipe(model, torch.optim.SGD(model.parameters(), lr=0.1), None, batches,
                  forward_loss=forward_loss, name="fail")
