"""One file per TF op (or op family); each registers itself with ``@lowering``."""
