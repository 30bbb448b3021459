"""Not imported as a package: this directory goes on PYTHONPATH so that Python finds its
sitecustomize.py at start-up (this file only makes packaging install it)."""
