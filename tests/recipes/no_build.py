"""A file that forgot to define build."""

def make(cfg):
    return None
