"""kernels/table_lookup.py against tf.raw_ops.LookupTableFindV2 on StaticHashTables: random
string and int64 keys (many, so index slots collide), empty and non-ASCII strings, int64 limits,
missing keys."""
import numpy as np
import tensorflow as tf

from tf_blade.kernels import table_lookup


def _pool(strings):
    offsets = np.zeros(len(strings) + 1, np.int64)
    offsets[1:] = np.cumsum([len(s) for s in strings])
    return offsets, np.frombuffer(b"".join(strings), np.uint8).copy()


def test_string_keys(rng):
    keys = list({bytes(rng.integers(0, 256, int(rng.integers(0, 20))).astype(np.uint8)) for _ in range(2000)})
    keys += [b"", "\u00e9".encode()]
    keys = list(dict.fromkeys(keys))
    values = rng.integers(-2**62, 2**62, len(keys))
    table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(tf.constant(keys, tf.string),
                                                                          tf.constant(values)), -7)
    queries = keys[::3] + [b"missing", b"\x00", b"a" * 100]
    want = table.lookup(tf.constant(queries, tf.string)).numpy()
    k_off, k_dat = _pool(keys)
    slots = table_lookup.build_string(k_off, k_dat)
    q_off, q_dat = _pool(queries)
    got = table_lookup.find_string(np.arange(len(queries)), q_off, q_dat, slots, k_off, k_dat, values, np.array([-7]))
    np.testing.assert_array_equal(got, want)


def test_int_keys(rng):
    keys = np.unique(np.concatenate([rng.integers(-2**63, 2**63 - 1, 3000, dtype=np.int64, endpoint=True),
                                     [0, -1, 2**63 - 1, -2**63], np.arange(64) << 40]))
    values = rng.integers(0, 1000, len(keys))
    table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(keys, values), -1)
    queries = np.concatenate([keys[::2], rng.integers(-50, 50, 100)]).reshape(-1, 2)
    want = table.lookup(tf.constant(queries)).numpy()
    got = table_lookup.find_int(queries, table_lookup.build_int(keys), keys, values, np.array([-1]))
    np.testing.assert_array_equal(got.reshape(queries.shape), want)


def test_string_keys_with_buckets_for_the_rest(rng):
    """find_string_or_bucket against a StaticVocabularyTable's lookup: a key's value, else (missing,
    or its value is the lookup's default, -1) the string's out-of-vocabulary bucket past the
    table's size. Strings of every FarmHash length class, empty and non-ASCII ones."""
    keys = list(dict.fromkeys(bytes(rng.integers(0, 256, int(rng.integers(0, 70))).astype(np.uint8))
                              for _ in range(1500)))
    values = rng.integers(0, 2**40, len(keys))
    values[::97] = -1  # TF's lookup finds them, then hashes them all the same
    for buckets in (1, 7, 2**31 - 1):
        table = tf.lookup.StaticVocabularyTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(keys, tf.string), tf.constant(values)), buckets)
        queries = keys[::2] + [b"", b"missing", "\u00e9".encode(), b"b" * 17, b"c" * 33, b"d" * 65, b"e" * 300]
        want = table.lookup(tf.constant(queries, tf.string)).numpy()
        k_off, k_dat = _pool(keys)
        q_off, q_dat = _pool(queries)
        got = table_lookup.find_string_or_bucket(np.arange(len(queries)), q_off, q_dat,
                                                 table_lookup.build_string(k_off, k_dat), k_off, k_dat, values,
                                                 np.array([-1]), buckets, np.array([len(keys)]))
        np.testing.assert_array_equal(got, want)
