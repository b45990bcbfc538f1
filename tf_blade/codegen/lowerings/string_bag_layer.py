"""_BladeStringBagLayer and _BladeBagShape: a feature layer of string bags (feature_column/bag_layer.py)."""
import numpy as np

from ..registry import SpecOnlyLowering, lowering
from ...kernels.bag_layer import (BAG, DENSE, DIRECT_DTYPES, NO_ROW_SUM, POOLED, direct_spec,
                                  string_columns, want_layer)
from ...runtime.threads import parallel_enabled


def _want_tasks(node, direct=None):
    """The library tasks a layer runs, compiled when generate ends (kernels/bag_layer.py
    want_layer), from its tables' static shapes (unknown in a layer spec from before
    ``table_shape``): a kind's miss check only where a bucket of that kind may miss its table (a
    table of fewer rows), the pooling of tables of one column only where a POOLED column may have one."""
    kinds = node.attrs["kind"]
    shapes = node.attrs.get("table_shape", [[-1, -1]] * len(kinds))
    misses = {kind for kind, buckets, (rows, _) in zip(kinds, node.attrs["num_buckets"], shapes) if rows < buckets}
    one_column = any(kind == POOLED and width in (-1, 1) for kind, (_, width) in zip(kinds, shapes))
    want_layer(node.out_dtypes[0], POOLED in kinds, direct, bag_miss=BAG in misses, pooled_miss=POOLED in misses,
               pool_one=one_column)


@lowering("_BladeStringBagLayer")
class StringBagLayerLowering(SpecOnlyLowering):
    parallel = True  # its part gets ``wide``: whether this call may use every core

    def emit_plan(self, node, ins, em, check=True):
        """Builds the columns' lists and plans the layer: (plan values, rows, width). Without
        ``check`` the caller reads ``err`` itself."""
        kinds = node.attrs["kind"]
        n_bags, n = string_columns(kinds), len(kinds)
        strings, tables, vectors = iter(ins[:n_bags]), ins[n_bags:n_bags + n], ins[n_bags + n:]
        em.imports.add("from numba.typed import List")
        lists = ids, shapes, raw, tabs, vecs = [em.tmp(h) for h in ("ids", "shapes", "raw", "tabs", "vecs")]
        for name in lists:
            em.line(f"{name} = List()")  # one per line: Numba types an unpacked tuple of them as List[undefined]
        for kind, table in zip(kinds, tables):
            if kind != DENSE:
                s = next(strings)
                em.line(f"{ids}.append(np.ascontiguousarray({s.var}).ravel())")
                em.line(f"{shapes}.append(np.array({s.var}.shape, np.int64))")
                em.line(f"{raw}.append(np.ascontiguousarray({s.off}))")
            else:  # a numeric column: its value travels as its table; no strings
                em.line(f"{ids}.append(np.zeros(0, np.int64))")
                em.line(f"{shapes}.append(np.zeros(2, np.int64))")
                em.line(f"{raw}.append(np.zeros(0, np.uint8))")
            em.line(f"{tabs}.append(np.ascontiguousarray({table.var}))")
        for v in vectors:
            em.line(f"{vecs}.append({v.var}.astype(np.int64))")
        em.line(f"{vecs}.append(np.zeros(0, np.int64))  # never read: gives the list its type")
        # Copies: Numba types a module constant read-only, and plan and fill_wide compiled a second
        # time for that beside the direct path's (~2.5 s of a cold wide & deep)
        kind, buckets, modes, n_targets, program = (em.const(np.array(node.attrs[a], np.int64)) + ".copy()"
                                                    for a in ("kind", "num_buckets", "mode", "n_targets", "program"))
        _want_tasks(node)  # plan's task, and the blocks (and pool) tasks fill_wide runs
        layout, rows, width, _ = em.call(4, f"{em.kernel('bag_layer', 'plan_by_address')}({ids}, {shapes}, {raw}, {tabs}, {kind}, "
                                            f"{buckets}, {modes}, {n_targets}, {program}, {vecs}, err)", check)
        return [ids, raw, tabs, kind, buckets, modes, layout, "wide" if parallel_enabled() else "False"], rows, width

    @staticmethod
    def direct_inputs_ok(node, inputs, metas):
        """Whether ``emit_direct`` can compute this layer: ``inputs`` (its inputs' cluster input
        indices, None where the op makes one; ``metas`` their (dtype, rank)) are the op's own
        inputs but for numeric columns' [rows, width] values of the layer's dtype, there are no
        runtime shape vectors, and its dtype has a direct cfunc."""
        kinds, dtype = node.attrs["kind"], node.out_dtypes[0]
        n_bags = string_columns(kinds)
        if len(inputs) != n_bags + len(kinds) or dtype not in DIRECT_DTYPES:
            return False
        return all(at is not None or (i >= n_bags and kinds[i - n_bags] == DENSE and metas[i] == (dtype, 2))
                   for i, at in enumerate(inputs))

    def emit_direct(self, node, inputs, ranks, output, min_elements, em, row_sum=NO_ROW_SUM):
        """For the native entry when ``direct_inputs_ok``: one call of the library's direct cfunc
        (kernels/bag_layer.py) plans the layer from the op's input pointers, allocates output
        ``output`` and fills it, wide when the op runs alone and it reads ``min_elements`` or more.
        ``inputs``: op input indices, or the entry's variables holding values the op made (they
        join the op's pointers in slots after its inputs). ``row_sum``: what the output is, the
        layer or the Sum of its rows (direct spec, kernels/bag_layer.py).
        Returns the variable holding the entry's return code."""
        dtype = node.out_dtypes[0]
        _want_tasks(node, direct=row_sum != NO_ROW_SUM)  # and the tasks fill_wide runs
        kinds = node.attrs["kind"]
        slot = {var: len(ranks) + j for j, var in enumerate(dict.fromkeys(x for x in inputs if isinstance(x, str)))}
        strings = iter(inputs[:string_columns(kinds)])
        columns = []
        for kind, table in zip(kinds, inputs[string_columns(kinds):]):
            s = next(strings) if kind != DENSE else -1
            columns.append([s, ranks[s] if s >= 0 else 0, slot.get(table, table)])
        wide_from = min_elements if parallel_enabled() else np.iinfo(np.int64).max
        spec = direct_spec(len(ranks) + len(slot), output, wide_from, columns,
                           *(node.attrs[a] for a in ("kind", "num_buckets", "mode", "n_targets", "program")), row_sum)
        ptrs, shapes = "in_ptrs", "in_shapes"
        if slot:
            ptrs, shapes = em.tmp("ptrs"), em.tmp("shapes")
            em.line(f"{ptrs}, {shapes} = {em.kernel('bag_layer', 'with_values')}(in_ptrs, in_shapes, "
                    f"np.int64({len(ranks)}), np.int64({len(slot)}))")
            for var, at in slot.items():  # step outputs: C-contiguous (parts return ascontiguousarray)
                em.line(f"{em.kernel('bag_layer', 'value_slot')}({ptrs}, {shapes}, np.int64({at}), {var})")
        rc = em.tmp("rc")
        em.line(f"{rc} = {em.kernel('bag_layer', 'run_direct')}({ptrs}, {shapes}, {em.const(spec)}, ctx, alloc, "
                f"errbuf, np.{dtype})")
        if slot:  # read after the call, the values stay alive across it
            em.line(f"{rc} += 0 * ({' + '.join(f'{var}.shape[0]' for var in slot)})")
        return rc

    def emit_fill(self, node, plan, out, em):
        """Fills ``out`` (the planned [rows, width]) from ``plan``; sets ``err`` when it cannot
        (its scratch buffers: the caller checks)."""
        _want_tasks(node)  # the tasks fill_wide runs
        em.line(f"{em.kernel('bag_layer', 'fill_wide')}({', '.join(plan[:-1])}, {out}, {plan[-1]}, err)")

    def emit(self, node, ins, em):
        plan, rows, width = self.emit_plan(node, ins, em)
        out = em.tmp()
        em.line(f"{out} = np.empty(({rows}, {width}), np.{node.out_dtypes[0]})")
        self.emit_fill(node, plan, out, em)
        em.check()
        return [out]


@lowering("_BladeBagShape")
class BagShapeLowering(SpecOnlyLowering):
    reads_shapes_only = True

    def emit(self, node, ins, em):
        strings, new_shape, table, *targets = ins
        rows, _ = em.call(2, f"{em.kernel('string_bag', 'bag_rows')}(np.array({strings.var}.shape, np.int64), "
                             f"{new_shape.var}.astype(np.int64), err)", True)
        dims = em.tmp()
        em.line(f"{dims} = np.array([{rows}, {table.var}.shape[1]], np.int64)")
        for t in targets:
            (dims,) = em.call(1, f"{em.kernel('shape_ops', 'resolve_reshape')}({dims}, {t.var}.astype(np.int64), err)", True)
        out = em.tmp()
        em.line(f"{out} = {dims}.astype(np.{node.out_dtypes[0]})")
        return [out]
