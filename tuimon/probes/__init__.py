"""System probes, sampled in the supervisor (never in the training loop).

host.HostProbe: psutil, CPU % / RSS of each run's whole process tree, system CPU and memory.
gpu.GpuProbe: NVML, per-device and per-run GPU metrics; absence of a GPU is a value.
alerts: pure functions turning samples into warning strings.
No torch and no textual imports here: this runs in the UI / supervisor process.
"""

from tuimon.probes.alerts import run_alerts, system_alerts
from tuimon.probes.gpu import GpuProbe, decode_reasons, map_visible_devices
from tuimon.probes.host import HostProbe

__all__ = [
    "GpuProbe",
    "HostProbe",
    "decode_reasons",
    "map_visible_devices",
    "run_alerts",
    "system_alerts",
]
