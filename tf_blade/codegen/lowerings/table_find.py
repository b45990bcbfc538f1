"""_BladeTableFind: a LookupTableFindV2 whose static table passes/freeze_tables.py froze into
constants (index slots, the keys, the values); exists only inside fused clusters."""
from ..registry import Lowering, lowering


@lowering("_BladeTableFind")
class TableFindLowering(Lowering):
    def const_is_value(self, raw, index, value):
        return True  # the frozen table's arrays are only read: columns of other vocabularies share a template

    def emit(self, node, ins, em):
        keys, default, slots = ins[:3]
        if node.attrs["string_keys"]:
            key_offsets, key_data, values = ins[3:]
            call = (f"{em.kernel('table_lookup', 'find_string')}({keys.var}, {keys.off}, {keys.dat}, "
                    f"{slots.var}, {key_offsets.var}, {key_data.var}, {values.var}, {default.var})")
        else:
            table_keys, values = ins[3:]
            call = f"{em.kernel('table_lookup', 'find_int')}({keys.var}, {slots.var}, {table_keys.var}, {values.var}, {default.var})"
        (flat,) = em.call(1, call, False)
        out = em.tmp()
        em.line(f"{out} = {flat}.reshape({keys.var}.shape)")
        return [out]
