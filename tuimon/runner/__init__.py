"""Child side: runs one variant of a recipe and streams events. Imports torch, never textual."""
