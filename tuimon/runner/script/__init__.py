"""A user's own training script, unchanged (``tuimon run -- python train.py``): tuimon's hooks
load before the script (``boot/sitecustomize.py``), find its steps from the outside and stream
the same events a recipe's runner does.

``hooks`` patches torch's entry points (optimizer steps, backward, DataLoader batches,
``Module.train``, GradScaler) to tell ``steps.ScriptSteps`` what happened; ``ScriptSteps`` turns
that into steps at step boundaries (the lead optimizer's step) and obeys the control lines
there; ``compile_modes`` applies the variant's compile mode to the script's own
``torch.compile`` calls, or compiles the trained module itself. Child side: imports torch,
never textual.
"""
