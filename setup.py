from setuptools import setup

# kernels/, feature_column/ and benchmarks/ sit at the top level to show the architecture, but
# install as tf_blade.kernels / .feature_column / .benchmarks so the namespace stays one package.
setup(
    name="tf_blade",
    version="0.1.0",
    description="Fuses the sparse feature-column subgraphs of TensorFlow recommendation models "
                "into Numba-generated kernels called through a no-GIL native op.",
    python_requires=">=3.10",
    packages=[
        "tf_blade", "tf_blade.graph", "tf_blade.passes", "tf_blade.codegen",
        "tf_blade.codegen.lowerings", "tf_blade.runtime",
        "tf_blade.kernels", "tf_blade.feature_column", "tf_blade.benchmarks",
    ],
    package_dir={
        "tf_blade.kernels": "kernels",
        "tf_blade.feature_column": "feature_column",
        "tf_blade.benchmarks": "benchmarks",
    },
    package_data={"tf_blade.runtime": ["*.cc"]},
    install_requires=[
        # Not tensorflow-cpu: tf-keras requires the `tensorflow` distribution, so naming
        # tensorflow-cpu installed both, the second over the first's files (1.9 GB, and the
        # tensorflow build was the one loaded).
        "tensorflow==2.21.0",
        "tf-keras~=2.21.0",
        "numba>=0.68",
        "numpy",
        "tf2onnx",
    ],
    extras_require={"test": ["pytest", "pytest-xdist", "hypothesis"],
                    # the benchmark suite's PNG plot and its torch.embedding_bag anchor column
                    "bench": ["matplotlib", "torch==2.13.0"]},
    entry_points={"console_scripts": ["tf-blade=tf_blade.cli:main"]},
)
