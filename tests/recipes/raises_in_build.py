def build(cfg):
    raise ValueError("boom: this recipe cannot build")
