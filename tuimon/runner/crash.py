"""What a failed run's event says beyond the exception: the CUDA allocator's peaks with an
out-of-memory error, and where in the user's file (recipe or script) it was raised. Shared by
the recipe runner and the script hooks."""

from __future__ import annotations

import os
import sys
import traceback

from tuimon import failures


def cuda_memory(exc: BaseException) -> dict:
    """The CUDA allocator's peaks, said with a CUDA out-of-memory error (the device is still
    usable after one: the failed allocation was never made)."""
    torch = sys.modules.get("torch")
    if torch is None or failures.of_exception(exc)["kind"] != failures.OOM_CUDA:
        return {}
    try:
        if not torch.cuda.is_initialized():
            return {}
        return {"cuda_max_allocated": torch.cuda.max_memory_allocated(),
                "cuda_max_reserved": torch.cuda.max_memory_reserved(),
                "cuda_total": torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory}
    except Exception:  # noqa: BLE001 - a broken context must not hide the failure itself
        return {}


def recipe_frame(exc: BaseException, recipe_path: str) -> str | None:
    """'bad.py:7' for the deepest traceback frame inside the recipe file, if any."""
    target = os.path.realpath(recipe_path)
    where = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.realpath(frame.filename) == target:
            where = f"{os.path.basename(frame.filename)}:{frame.lineno}"
    return where
