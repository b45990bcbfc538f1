"""Identity / StopGradient / Snapshot: the value passes through unchanged."""
from ..registry import Lowering, lowering


@lowering("Identity", "StopGradient", "Snapshot")
class IdentityLowering(Lowering):
    view_only = True

    def emit(self, node, ins, em):
        return [ins[0]]
