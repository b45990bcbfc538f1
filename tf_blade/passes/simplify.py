"""Runs TensorFlow's own graph simplifications (Grappler) before clustering.

A function graph reaches tf_blade as traced: Keras and tf.ragged emit hundreds of shape and index
ops that TF's runtime never runs, because Grappler folds them first (constants, known shapes,
duplicate subgraphs, relay Identities and NoOps). Clustering the traced graph made tf_blade compile
all of them. Only rewrites stock TF applies to the same graph are asked for, and none that fuse
ops into TF-internal kernels (remapper) or change layouts: TF applies those to what we leave it.
"""
from __future__ import annotations

from ..graph.ir import runs_unread

# Not "arithmetic": among its rewrites, Gather(table, Unique(ids)) pooled by Unique's index
# becomes a pooling over the whole table read (SimplifyEmbeddingLookupStage), which hides the
# embedding chains the feature-column rewrites recognise; it saved 14 of 349 ops of a ragged where.
OPTIMIZERS = ["constfold", "shape", "dependency", "common_subgraph_elimination"]


def simplify(graph_def, outputs, fed=()):
    """Returns graph_def simplified by Grappler. The nodes named in ``outputs``, the inputs
    (placeholders) and every stateful node keep their names and run as before. ``fed``: Const
    nodes that TF's runtime passes in as arguments (captured tensors); they are not folded."""
    from tensorflow.core.protobuf import config_pb2, meta_graph_pb2, rewriter_config_pb2
    from tensorflow.python.grappler import tf_optimizer

    keep = set(outputs) | {n.name for n in graph_def.node if n.op == "Placeholder" or runs_unread(n.op)}

    meta = meta_graph_pb2.MetaGraphDef()
    meta.graph_def.CopyFrom(graph_def)
    # Grappler preserves the nodes of the "train_op" collection: it reads them as fetches.
    meta.collection_def["train_op"].node_list.value.extend(sorted(keep))
    # Grappler reads a signature's inputs as fed tensors: constants it must not fold into others.
    for node in graph_def.node:
        if node.name in fed:
            info = meta.signature_def["fed"].inputs[node.name]
            info.name, info.dtype = node.name + ":0", node.attr["dtype"].type
            info.tensor_shape.CopyFrom(node.attr["value"].tensor.tensor_shape)
    config = config_pb2.ConfigProto()
    rewrites = config.graph_options.rewrite_options
    rewrites.optimizers[:] = OPTIMIZERS
    rewrites.meta_optimizer_iterations = rewriter_config_pb2.RewriterConfig.ONE
    rewrites.min_graph_nodes = -1   # small graphs too
    return tf_optimizer.OptimizeGraph(config, meta)
