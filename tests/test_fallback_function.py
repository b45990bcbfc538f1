"""The fallback function (passes/fallback.py) is written as a FunctionDef directly: its body must
name every output by its op's output arg, lists and multi-output ops included, and compute what
the ops it holds compute."""
import numpy as np
import tensorflow as tf
from tensorflow.python.framework.function_def_to_graph import function_def_to_graph

from tf_blade.graph.ir import from_graphdef
from tf_blade.passes.fallback import add_fallback_function


def _ops(x, ids):
    a, b, c = tf.unstack(x, num=3, axis=1)                     # Unpack: output 2 of a list
    uniq, idx = tf.unique(ids)                                   # output 1 of two
    parts = tf.split(x, 3, axis=1)                               # Split: number_attr
    both = tf.concat([tf.reshape(c, [-1, 1]), parts[1]], axis=1) # ConcatV2 over a list input
    filled = tf.raw_ops.SparseFillEmptyRows(                     # output 2 of four
        indices=tf.constant([[1, 0]], tf.int64), values=tf.constant([7], tf.int64),
        dense_shape=tf.constant([3, 2], tf.int64), default_value=tf.constant(0, tf.int64))
    return both, idx, uniq, filled.empty_row_indicator


def test_fallback_function_names_list_and_multi_outputs():
    specs = [tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([None], tf.int64)]
    cf = tf.function(_ops, input_signature=specs).get_concrete_function()
    graph = from_graphdef(cf.graph.as_graph_def())
    inputs = [t.op.name for t in cf.inputs]
    outputs = [f"{t.op.name}:{t.value_index}" if t.value_index else t.op.name for t in cf.outputs]
    outputs = [graph.nodes[o].inputs[0] if graph.nodes[o].op == "Identity" else o for o in outputs]
    cluster = [n for n, node in graph.nodes.items()
               if node.op not in ("Placeholder", "NoOp", "Identity") and n not in inputs]
    name = add_fallback_function(graph, cluster, inputs, [tf.float32.as_datatype_enum, tf.int64.as_datatype_enum],
                                 outputs, "test")
    fdef = next(f for f in graph.library.function if f.signature.name == name)
    rebuilt = function_def_to_graph(fdef)  # fails on an input it cannot resolve
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 3)).astype(np.float32)
    ids = rng.integers(0, 4, size=9)
    want = [t.numpy() for t in cf(tf.constant(x), tf.constant(ids))]
    with tf.compat.v1.Session(graph=rebuilt) as sess:
        got = sess.run([t.name for t in rebuilt.outputs], {t.name: v for t, v in zip(rebuilt.inputs, [x, ids])})
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
