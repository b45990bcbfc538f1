"""Interleaved A/B timing: both sides run in the same process, alternately, medians compared."""
from __future__ import annotations

import os
import time

import numpy as np


def interleaved(functions: dict, rounds: int = 50, warmup: int = 3, sample=None) -> dict:
    """{name: callable} -> {name: median seconds} (or of ``sample``'s values, below); every
    callable runs once a round (after ``warmup`` runs each, not recorded), so drift
    and noise from the (shared, noisy) machine hit every side alike, in a fresh random order
    each round (seeded): a call right after a stock TF call runs slower (TF's threads and
    caches), and a fixed order charged that to one side (two versions of wide & deep's layers
    behind TF: whichever ran right after TF read 1.06-1.23x the other, either way round).
    ``sample(side)``, when given, runs a side (``functions``' values are then whatever it takes)
    and returns what a round records instead of its time: the medians are of those (the benchmark
    suite's calls per second)."""
    if sample is None:
        def sample(fn):
            start = time.perf_counter()
            fn()
            return time.perf_counter() - start
    for fn in functions.values():
        for _ in range(warmup):
            sample(fn)
    samples = {name: [] for name in functions}
    order = list(functions.items())
    shuffle = np.random.default_rng(0).permutation
    for _ in range(rounds):
        for k in shuffle(len(order)):
            name, fn = order[k]
            samples[name].append(sample(fn))
    return {name: float(np.median(s)) for name, s in samples.items()}


def rss_mb() -> float:
    """This process's resident memory now (Linux), in MiB: the soak run's and the leak test's probe."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
