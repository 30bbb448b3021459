"""The measured GEMM peak in rounds (runner/peak_bench.py ``measure``): a slowdown that outlasts
one round is not the figure, and measuring goes on while the best round is not reached twice.
The GEMMs are faked: each call of ``_time_mm`` gives the next figure of a script."""

from __future__ import annotations

import pytest

from tuimon.runner import peak_bench


class FakeTorch:
    """What ``measure`` asks of torch on a CPU: its threads."""

    def __init__(self, threads: int) -> None:
        self.threads = threads

    def get_num_threads(self) -> int:
        return self.threads

    def set_num_threads(self, n: int) -> None:
        self.threads = n


def scripted(monkeypatch, per_round):
    """``_time_mm`` reads FLOP/s from ``per_round(round, dtype, threads)``; returns the calls."""
    calls = []
    sizes = len(peak_bench.CPU_SIZES)

    def fake(torch, device, name, n):
        calls.append((name, torch.threads))
        done = sum(1 for c in calls if c == (name, torch.threads))
        return per_round((done - 1) // sizes, name, torch.threads)

    monkeypatch.setattr(peak_bench, "_time_mm", fake)
    return calls


def test_a_slow_first_round_is_not_the_figure(monkeypatch):
    # round 0: the host busy (every figure 15 % low); then the machine as it is
    scripted(monkeypatch, lambda r, name, threads: (85e9 if r == 0 else 100e9) * threads)
    got = peak_bench.measure(FakeTorch(2), "cpu")
    assert got["peaks"]["fp32"] == 200e9  # the one-thread best times the two threads
    assert got["rounds"] == 3  # rounds 1 and 2 agree at the top


def test_two_slow_rounds_that_agree_are_not_the_figure(monkeypatch):
    # rounds 0 and 1 slowed alike (CI, right after the parallel tests): they agree, at 85 %
    scripted(monkeypatch, lambda r, name, threads: (85e9 if r < 2 else 100e9) * threads)
    got = peak_bench.measure(FakeTorch(2), "cpu")
    assert got["peaks"]["fp32"] == 200e9 and got["rounds"] == 4


def test_agreeing_rounds_stop_at_the_least_number(monkeypatch):
    calls = scripted(monkeypatch, lambda r, name, threads: 100e9 * threads)
    got = peak_bench.measure(FakeTorch(2), "cpu")
    assert got["rounds"] == peak_bench.MIN_ROUNDS == 3 and got["peaks"] == {"fp32": 200e9, "bf16": 200e9}
    assert calls.count(("fp32", 1)) == 3 * len(peak_bench.CPU_SIZES)  # the one-thread pass, each round
    assert got["per_thread"]["fp32"] == 100e9 and got["all_threads"]["fp32"] == 200e9


def test_a_best_never_reached_again_measures_every_round_and_keeps_it(monkeypatch):
    # each round slower than the one before (a machine filling up): never settled
    scripted(monkeypatch, lambda r, name, threads: 100e9 * (0.9 ** r))
    got = peak_bench.measure(FakeTorch(1), "cpu")
    assert got["rounds"] == peak_bench.MAX_ROUNDS
    assert got["peaks"]["fp32"] == pytest.approx(100e9)


def test_a_dtype_that_cannot_run_is_left_out(monkeypatch):
    scripted(monkeypatch, lambda r, name, threads: None if name == "bf16" else 50e9)
    got = peak_bench.measure(FakeTorch(1), "cpu")
    assert got["peaks"] == {"fp32": 50e9} and got["rounds"] == peak_bench.MIN_ROUNDS
