"""The ``tf-blade`` command.

    tf-blade optimize SAVED_MODEL OUTPUT_DIR [--bridge native|numpy|auto] [--min-cluster-size N]
    tf-blade bench [benchmark-suite options]     (see ``tf-blade bench --help``)
    tf-blade demo  [demo options]                (the main job: python -m tf_blade.demo)
    tf-blade precompile [MODEL_KIND ...]         (compile the kernel library before the first model)
"""
from __future__ import annotations

import argparse
import sys


def _optimize(argv):
    parser = argparse.ArgumentParser(prog="tf-blade optimize",
                                     description="Optimize a SavedModel into OUTPUT_DIR.")
    parser.add_argument("saved_model")
    parser.add_argument("output_dir")
    parser.add_argument("--bridge", choices=("auto", "native", "numpy"), default=None)
    parser.add_argument("--min-cluster-size", type=int, default=2)
    args = parser.parse_args(argv)
    import tf_blade
    optimized = tf_blade.optimize(args.saved_model, args.output_dir, bridge=args.bridge,
                                  min_cluster_size=args.min_cluster_size)
    print(optimized.report)
    print(f"optimized SavedModel written to {args.output_dir}")
    return 0


def _bench(argv):
    from tf_blade.benchmarks import suite
    return suite.main(argv)


def _demo(argv):
    from tf_blade import demo
    return demo.main(argv)


def _precompile(argv):
    from tf_blade import precompile
    return precompile.main(argv)


COMMANDS = {"optimize": _optimize, "bench": _bench, "demo": _demo, "precompile": _precompile}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        asked = not argv or argv[0] in ("-h", "--help")
        print(__doc__.strip(), file=sys.stdout if asked else sys.stderr)  # help goes where argparse puts it
        return 0 if asked else 2
    return COMMANDS[argv[0]](argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main())
