"""tuimon: is torch.compile worth it for my model, and where does my step time go?"""

__version__ = "0.1.0"
