"""A training package run as ``python -m mypkg.train --config cfg.json``."""
