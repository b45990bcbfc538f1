"""The benchmarks' interleaved timer (tf_blade/timing.py)."""
from collections import Counter

from tf_blade.timing import interleaved


def test_interleaved_runs_the_sides_in_a_fresh_order_each_round():
    # A call right after stock TF's runs slower; a fixed order charged that to one side. In
    # random orders each side runs once a round and follows each other side about as often.
    calls = []
    times = interleaved({name: (lambda name=name: calls.append(name)) for name in "abc"}, rounds=600, warmup=1)
    assert set(times) == set("abc")
    rounds = [calls[3 + 3 * r:6 + 3 * r] for r in range(600)]  # after the warm-up's a, b, c
    assert all(sorted(r) == list("abc") for r in rounds)
    followers = Counter((r[i], r[i + 1]) for r in rounds for i in range(2))
    assert len(followers) == 6 and min(followers.values()) > 0.8 * max(followers.values())


def test_interleaved_takes_the_median_of_what_sample_records():
    # The suite's throughput: each round records a side's calls per second, not its time; the
    # warm-up goes through ``sample`` too (the sides need not be callables) and is not recorded.
    ran = []
    per_round = {"a": iter([100.0, 5.0, 1.0, 3.0]), "b": iter([100.0, 2.0, 9.0, 4.0])}
    medians = interleaved({"a": "a", "b": "b"}, rounds=3, warmup=1,
                          sample=lambda side: ran.append(side) or next(per_round[side]))
    assert medians == {"a": 3.0, "b": 4.0} and sorted(ran) == ["a"] * 4 + ["b"] * 4
