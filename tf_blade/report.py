"""What optimize() did, in numbers a user can check."""
from __future__ import annotations

import dataclasses
import json
from typing import Dict, Optional


@dataclasses.dataclass
class Report:
    bridge: str
    functions: Dict[str, dict] = dataclasses.field(default_factory=dict)
    saved_to: Optional[str] = None
    # function name -> how the written SavedModel differs from the original there
    save_notes: Dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def fused_ops(self) -> int:
        return sum(len(f.get("clusters", [])) for f in self.functions.values())

    def to_dict(self):
        return dataclasses.asdict(self)

    def __str__(self):
        lines = [f"tf_blade report (bridge: {self.bridge})"]
        for name, f in self.functions.items():
            if "left_alone" in f:
                lines.append(f"  {name}: left alone - {f['left_alone']}")
                continue
            lines.append(f"  {name}: TF ops {f.get('tf_ops_before')} -> {f.get('tf_ops_after')}, "
                         f"{len(f.get('clusters', []))} fused op(s)")
            for c in f.get("clusters", []):
                lines.append(f"    {c['name']} ({c['op']}): {c['tf_ops']} TF ops")
            for failure in f.get("compile_failed", []):
                lines.append(f"    kept in TF, kernel failed to compile: {failure['tf_ops']} TF ops ({failure['reason']})")
            for reason, count in f.get("not_fused", {}).items():
                lines.append(f"    not fused: {count} x {reason}")
        if self.saved_to:
            lines.append(f"  saved to {self.saved_to}")
        for name, note in self.save_notes.items():
            lines.append(f"    {name}: {note}")
        return "\n".join(lines)

    def to_json(self):
        return json.dumps(self.to_dict(), indent=2)
