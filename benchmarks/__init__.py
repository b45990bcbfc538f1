"""Benchmarks: stock TF vs tf_blade in the same process, interleaved; run as python -m benchmarks.<name>."""
