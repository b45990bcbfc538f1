from setuptools import setup

# kernels/ and feature_column/ sit at the top level to show the architecture, but install
# as tf_blade.kernels / tf_blade.feature_column so the import namespace stays one package.
setup(
    name="tf_blade",
    version="0.1.0",
    description="Fuses the sparse feature-column subgraphs of TensorFlow recommendation models "
                "into Numba-generated kernels called through a no-GIL native op.",
    python_requires=">=3.10",
    packages=[
        "tf_blade", "tf_blade.graph", "tf_blade.passes", "tf_blade.codegen",
        "tf_blade.codegen.lowerings", "tf_blade.runtime",
        "tf_blade.kernels", "tf_blade.feature_column",
    ],
    package_dir={
        "tf_blade.kernels": "kernels",
        "tf_blade.feature_column": "feature_column",
    },
    package_data={"tf_blade.runtime": ["*.cc"]},
    install_requires=[
        "tensorflow-cpu==2.21.0",
        "tf-keras~=2.21.0",
        "numba>=0.68",
        "numpy",
        "tf2onnx",
    ],
    extras_require={"test": ["pytest", "hypothesis"]},
    entry_points={"console_scripts": ["tf-blade=tf_blade.cli:main"]},
)
