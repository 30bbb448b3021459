"""mypkg: a small training package, run as ``python -m mypkg.train --config cfg.json``."""

__version__ = "0.1.0"
