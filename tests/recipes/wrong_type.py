def build(cfg):
    return {"model": None}
