"""The device a run trains on: ``--device`` checked against what torch sees, and its name as
the panels show it (the GPU's, or the CPU model and its cores)."""

from __future__ import annotations

import os
import platform


class SetupError(Exception):
    """The variant cannot be set up here (e.g. CUDA asked for and absent); one-line message."""


def resolve_device(torch, requested: str) -> str:
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise SetupError(f"--device {requested} asked for, but CUDA is not available here")
    if requested.startswith("cuda:"):
        count = torch.cuda.device_count()
        if int(requested.split(":", 1)[1]) >= count:
            raise SetupError(f"--device {requested} asked for, but there {'is' if count == 1 else 'are'} "
                             f"{count} CUDA device{'' if count == 1 else 's'} here (cuda:0"
                             f"{f' to cuda:{count - 1}' if count > 1 else ''})")
    return requested


def device_name(torch, device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(device)
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    except OSError:
        pass
    return f"{platform.machine()}, {os.cpu_count()} cores"
