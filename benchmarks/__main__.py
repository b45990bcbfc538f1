"""``python -m benchmarks [suite options]`` (``python -m tf_blade.benchmarks`` when installed):
the benchmark suite, as ``tf-blade bench`` runs it (benchmarks/suite.py)."""
import sys

from .suite import main

sys.exit(main())
