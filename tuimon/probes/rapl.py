"""CPU energy from RAPL's counters in sysfs (Linux powercap), sampled in the supervisor.

``/sys/class/powercap/intel-rapl:N/energy_uj`` is each package's energy in µJ since some past
moment (AMD's packages show under the same name on recent kernels), wrapping at
``max_energy_range_uj``. Since 2020 (CVE-2020-8694) the counter is root-only on most
distributions: then ``available`` is False and ``reason`` says so in one line, said once by the
sampler; nothing raises.

``RaplProbe().read()`` returns the packages' energy in µJ since the probe began (wraps undone),
or None. Only package zones are summed (a "psys" zone would count the packages again), the
sub-zones (``intel-rapl:N:M``: cores, uncore, dram) never. The machine's whole package energy:
every process's, not one run's (analysis/stats/energy.py attributes it only where a run stepped
alone).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = "/sys/class/powercap"
_ZONE = re.compile(r"intel-rapl:\d+$")


class RaplProbe:
    def __init__(self, root: str | Path = ROOT) -> None:
        self.available = False
        self.reason: str | None = None
        self._zones: list[tuple[Path, int]] = []  # (energy_uj file, its wrap range)
        self._last: dict[Path, int] = {}
        self._total = 0
        root = Path(root)
        try:
            dirs = sorted(p for p in root.iterdir() if _ZONE.match(p.name))
        except OSError:
            dirs = []
        if not dirs:
            self.reason = f"no RAPL counters ({root}/intel-rapl:*)"
            return
        packages = [d for d in dirs if _read_text(d / "name").startswith("package")] or dirs
        for d in packages:
            self._zones.append((d / "energy_uj", _read_int(d / "max_energy_range_uj") or 0))
        try:
            for path, _ in self._zones:
                self._last[path] = int(path.read_text())
        except PermissionError:
            self.reason = (f"RAPL's counters are readable by root only here ({self._zones[0][0]}: "
                           "permission denied)")
            return
        except (OSError, ValueError) as exc:
            self.reason = f"RAPL's counters unreadable: {type(exc).__name__}: {exc}"
            return
        self.available = True

    def read(self) -> int | None:
        """The packages' energy since the probe began, µJ (None: unreadable, now or always)."""
        if not self.available:
            return None
        try:
            for path, wrap in self._zones:
                now = int(path.read_text())
                before = self._last[path]
                delta = now - before
                if delta < 0:  # the counter wrapped (every ~60 h at 260 W, sooner at more)
                    delta += wrap if wrap > before else 0
                self._total += max(0, delta)
                self._last[path] = now
        except (OSError, ValueError):
            return None
        return self._total


def _read_text(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _read_int(path: Path) -> int | None:
    try:
        return int(_read_text(path))
    except ValueError:
        return None
