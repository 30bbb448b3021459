"""A trained model used through its parts: calls with gradients off, told (issue 40).

An RL agent is trained by one optimizer over its actor and critic but never called itself: the
script calls ``agent.get_action_and_value()``, which calls the parts (cleanrl's PPO). No module
holds all the optimizer's parameters, so the forward timer (phases.py) times none, and its
rollout (128 calls of the parts with gradients off before every 16th update) was no step's
"outside training" work. Each part's call slot (``_compiled_call_impl``, where a compile in place
puts its compiled call) gets a thin wrapper that tells the steps of a call with gradients off,
then calls what was there: a compiled part stays compiled, and no global hook is added (Dynamo
guards on those). Nothing is timed here; a call with gradients on costs one check.
"""

from __future__ import annotations

import weakref

import torch


def watch(module, told) -> None:
    """Tell ``told()`` of each call of ``module`` with gradients off (ScriptSteps.no_grad_call)."""
    inner = module._compiled_call_impl  # tuimon's compile in place, or None: its own call
    call_impl, ref, grad = type(module)._call_impl, weakref.ref(module), torch.is_grad_enabled

    def call(*args, **kwargs):
        if not grad():
            told()  # sampling, a rollout: the step held work outside training
        return inner(*args, **kwargs) if inner is not None else call_impl(ref(), *args, **kwargs)

    object.__setattr__(module, "_compiled_call_impl", call)  # on it alone (phases.py's _slot)
