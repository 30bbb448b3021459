"""What only torch knows, for ``tuimon doctor``: its build, CUDA, cuDNN, the C++ compiler
Inductor uses on CPU and Triton on GPU. Run as a child (``python -m tuimon.runner.torch_facts``
prints one JSON object) so the doctor process never imports torch and a broken install is a line
in the report, not a crash.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from importlib import metadata
from typing import Any

CXX_FALLBACK = ("g++", "c++", "clang++")  # Inductor's own search order on Linux, roughly
# Before torch is imported: asking Inductor for its cache directory sets TORCHINDUCTOR_CACHE_DIR.
CACHE_ENV = {k: os.environ.get(k) for k in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}


def torch_facts() -> dict:
    """Run in the child: torch's build, CUDA, cuDNN, Inductor's C++ compiler and Triton."""
    import warnings

    try:
        import torch
    except Exception as exc:  # not installed, or a broken install (missing .so, ABI)
        return {"ok": False, "error": f"import torch failed: {type(exc).__name__}: {exc}"}
    facts: dict[str, Any] = {
        "ok": True,
        "version": torch.__version__,
        "built_cuda": torch.version.cuda,
        "built_hip": getattr(torch.version, "hip", None),
        "cudnn": None,
        "threads": torch.get_num_threads(),
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        available = torch.cuda.is_available()
    facts["cuda_available"] = available
    facts["cuda_why_not"] = None
    facts["cuda_devices"] = []
    if not available:
        if torch.version.cuda is None and facts["built_hip"] is None:
            facts["cuda_why_not"] = "this torch is a CPU-only build"
        elif caught:
            facts["cuda_why_not"] = str(caught[0].message).strip().splitlines()[0]
        else:
            facts["cuda_why_not"] = "no CUDA device visible (no driver, or CUDA_VISIBLE_DEVICES hides them)"
    with contextlib.suppress(Exception):
        facts["cudnn"] = _cudnn_text(torch.backends.cudnn.version())
    if available:
        for i in range(torch.cuda.device_count()):
            try:
                p = torch.cuda.get_device_properties(i)
                facts["cuda_devices"].append({"index": i, "name": p.name, "memory": p.total_memory,
                                              "capability": f"{p.major}.{p.minor}"})
            except Exception as exc:
                facts["cuda_devices"].append({"index": i, "error": f"{type(exc).__name__}: {exc}"})
    facts["cpp_compiler"] = _cpp_compiler()
    facts["triton"] = _triton(available)
    facts["caches"] = _caches(torch)
    return facts


REMOTE = (("torch._inductor.config", "fx_graph_remote_cache", "FX graph"),
          ("torch._functorch.config", "enable_remote_autograd_cache", "AOTAutograd"),
          ("torch._inductor.config", "autotune_remote_cache", "autotuning"),
          ("torch._inductor.config", "bundled_autotune_remote_cache", "bundled autotuning"))
REMOTE_ENV = ("TORCHINDUCTOR_REDIS_URL", "TORCHINDUCTOR_REDIS_HOST", "TORCHINDUCTOR_REDIS_PORT")


def _caches(torch) -> dict:
    """Where torch.compile's caches live for a process started here (tuimon's runs get their own),
    whether remote caches are on, and whether this torch bundles its caches (the mega-cache)."""
    import importlib
    import tempfile

    bundles = hasattr(getattr(torch, "compiler", None), "save_cache_artifacts")
    out: dict[str, Any] = {"inductor": None, "inductor_from": None, "triton": None,
                           "mega_cache": bundles, "remote": {},
                           "remote_env": {k: os.environ[k] for k in REMOTE_ENV if k in os.environ}}
    if CACHE_ENV["TORCHINDUCTOR_CACHE_DIR"]:
        out["inductor"] = CACHE_ENV["TORCHINDUCTOR_CACHE_DIR"]
        out["inductor_from"] = "TORCHINDUCTOR_CACHE_DIR"
    else:
        try:  # torch >= 2.5; earlier: the same rule, by hand
            from torch._inductor.runtime.cache_dir_utils import default_cache_dir

            out["inductor"] = default_cache_dir()
        except Exception:
            import getpass

            out["inductor"] = os.path.join(tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}")
        out["inductor_from"] = "torch's default"
    out["inductor"] = os.path.abspath(out["inductor"])
    out["triton"] = CACHE_ENV["TRITON_CACHE_DIR"] or os.path.join(out["inductor"], "triton")
    for module, name, words in REMOTE:
        with contextlib.suppress(Exception):
            out["remote"][words] = getattr(importlib.import_module(module), name)
    return out


def _cudnn_text(v: int | None) -> str | None:
    if not v:
        return None
    # cuDNN 9 packs major*10000 + minor*100 + patch; cuDNN 8 packs major*1000 + minor*100 + patch
    major, rest = (v // 10000, v % 10000) if v >= 90000 else (v // 1000, v % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def _cpp_compiler() -> dict:
    """The compiler Inductor's C++ backend (CPU) will run, as torch's own config finds it."""
    found: dict[str, Any] = {"name": None, "path": None, "version": None, "from": None, "error": None}
    try:
        from torch._inductor import cpp_builder

        found["name"] = cpp_builder.get_cpp_compiler()
        found["from"] = "torch._inductor.cpp_builder.get_cpp_compiler()"
    except Exception as exc:  # none found, or torch moved it
        text = str(exc).strip()
        found["error"] = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
        for name in CXX_FALLBACK:
            if shutil.which(name):
                found["name"], found["from"] = name, "PATH (torch's own lookup failed)"
                break
    if found["name"]:
        found["path"] = shutil.which(found["name"]) or found["name"]
        try:
            text = subprocess.run([found["path"], "--version"], capture_output=True, text=True,
                                  timeout=30, env={**os.environ, "LC_ALL": "C"}).stdout
            found["version"] = text.strip().splitlines()[0] if text.strip() else None
        except (OSError, subprocess.SubprocessError):
            pass
    return found


def _triton(cuda: bool) -> dict:
    """Triton writes Inductor's GPU kernels; usable only with a GPU that torch can drive."""
    out: dict[str, Any] = {"version": _version("triton"), "usable": False, "why_not": None}
    if out["version"] is None:
        out["why_not"] = "triton is not installed (Inductor cannot compile for the GPU)"
        return out
    if not cuda:
        out["why_not"] = "no CUDA device (Triton is Inductor's GPU backend; on CPU Inductor uses C++)"
        return out
    try:
        from torch.utils._triton import has_triton

        out["usable"] = bool(has_triton())
        if not out["usable"]:
            out["why_not"] = "torch.utils._triton.has_triton() is False (device too old, or a broken install)"
    except Exception as exc:
        out["why_not"] = f"{type(exc).__name__}: {exc}"
    return out


def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    print(json.dumps(torch_facts()))
