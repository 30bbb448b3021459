"""Numbers as short text, alike in every view (summary.md, the terminal table, the TUI): a
dash for "not measured", units that scale."""

from __future__ import annotations

DASH = "–"


def fmt_ms(ms: float | None) -> str:
    if ms is None:
        return DASH
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    decimals = 3 if ms < 1 else 2 if ms < 10 else 1 if ms < 100 else 0
    return f"{ms:.{decimals}f} ms"


def fmt_rate(per_s: float | None, unit: str = "samples") -> str:
    """Throughput that reads right at any speed: 89,410 samples/s, 2.5 samples/s, 4.0 s/sample."""
    if not per_s:
        return DASH
    if per_s >= 100:
        return f"{per_s:,.0f} {unit}/s"
    if per_s >= 1:
        return f"{per_s:.1f} {unit}/s"
    return f"{1 / per_s:.1f} s/{unit.rstrip('s')}"


def fmt_s(s: float | None) -> str:
    if s is None:
        return DASH
    if s >= 120:
        return f"{s / 60:.1f} min"
    return f"{s:.1f} s" if s >= 1 else f"{s * 1000:.0f} ms"


def fmt_bytes(n: float | None) -> str:
    if not n:
        return DASH
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return DASH


def fmt_joules(j: float | None) -> str:
    """Energy: 0.412 J, 81.2 J, 3.40 kJ, 1.25 kWh."""
    if j is None:
        return DASH
    if j >= 3.6e6:
        return f"{j / 3.6e6:.2f} kWh"
    if j >= 1e3:
        return f"{j / 1e3:.2f} kJ"
    return f"{j:.3g} J"


def fmt_count(n: float | None) -> str:
    """A count that reads at a glance: 0, 42, 9.2k, 17k, 1.3M."""
    if n is None:
        return DASH
    if n < 1000:
        return f"{n:.0f}"
    for div, unit in ((1e6, "M"), (1e3, "k")):
        if n >= div:
            x = n / div
            return f"{x:.1f}{unit}" if x < 10 else f"{x:.0f}{unit}"
    return DASH


def fmt_loss(x: float) -> str:
    return f"{x:.4f}" if 1e-3 <= abs(x) < 1e4 else f"{x:.3e}"


def short_name(name: str, width: int = 40) -> str:
    """An op name for one line (compiled graphs are named '## Call CompiledFxGraph <hash> ##')."""
    name = name.strip("# ").replace("Call CompiledFxGraph", "CompiledFxGraph")
    return name if len(name) <= width else name[:width - 1] + "…"


def fmt_ratio(speedup: float, lo: float | None = None, hi: float | None = None) -> str:
    """A speedup (before / after) in words, its 95 % interval worded the same way: '1.62×
    faster (95 % CI 1.41–1.86× faster)', '1.34× slower (95 % CI 1.23–1.45× slower)', and an
    interval across 1 both ways: '2.22× slower (95 % CI 6.67× slower to 1.32× faster: within
    noise)'. A slower ratio and a speedup's interval side by side read as a contradiction."""

    def words(x: float) -> str:
        if round(x, 2) == 1.0 or round(1 / x, 2) == 1.0:
            return "1.00×"
        return f"{x:.2f}× faster" if x > 1 else f"{1 / x:.2f}× slower"

    text = words(speedup)
    if lo is None or hi is None or lo <= 0:
        return text
    if lo >= 1.0:
        return f"{text} (95 % CI {lo:.2f}–{hi:.2f}× faster)"
    if hi <= 1.0:
        return f"{text} (95 % CI {1 / hi:.2f}–{1 / lo:.2f}× slower)"
    return f"{text} (95 % CI {words(lo)} to {words(hi)}: within noise)"


def fmt_span(s: float | None) -> str:
    """A length of time that reads right from seconds to days: 45.3 s, 6.1 min, 38 min, 2 h 5 min."""
    if s is None:
        return DASH
    if s < 120:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{s / 60:.1f} min" if s < 600 else f"{s / 60:.0f} min"
    hours, minutes = divmod(round(s / 60), 60)
    return f"{hours} h" if minutes == 0 else f"{hours} h {minutes} min"


def fmt_about(s: float) -> str:
    """An estimate of a length of time, read as one: '~40 s', '~3 min', '~1 h 5 min'."""
    if s < 60:
        return f"~{max(1, round(s / 5) * 5 if s > 10 else round(s)):.0f} s"
    if s < 3600:
        return f"~{round(s / 60):.0f} min"
    return "~" + fmt_span(round(s / 300) * 300)


def fmt_pct(share: float) -> str:
    """A share as a percentage: '30 %', and below 1 % one decimal: '0.4 %'."""
    return f"{share * 100:.0f} %" if abs(share) >= 0.01 else f"{share * 100:.1f} %"


def fmt_flops(n: float | None, unit: str = "FLOP") -> str:
    """FLOPs or FLOP/s with an SI prefix, three digits: '15.2 MFLOP', '1.23 TFLOP/s' (unit
    'FLOP/s'); '0 FLOP'; a dash for None."""
    if n is None:
        return DASH
    for div, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            return f"{n / div:.3g} {prefix}{unit}"
    return f"{n:.0f} {unit}"


def fmt_small_pct(share: float) -> str:
    """A share as a percentage with the digits a small one needs: '31 %', '4.2 %', '0.07 %'."""
    pct = share * 100
    return f"{pct:.0f} %" if pct >= 10 else f"{pct:.1f} %" if pct >= 0.1 else f"{pct:.2f} %"


def fmt_short(ms: float) -> str:
    """A time in ms as a bare number, as few digits as it needs: 12, 3.4, 0.56, 0.004."""
    if ms >= 10:
        return f"{ms:.0f}"
    return f"{ms:.1f}" if ms >= 1 else f"{ms:.2f}" if ms >= 0.01 else f"{ms:.3f}"
