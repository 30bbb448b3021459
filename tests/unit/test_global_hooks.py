"""tuimon's global module hooks keep torch's warning about them out of the user's log, and only
while one is armed: the user's own global hooks still warn once ours are gone."""

import warnings

import torch
from torch import nn

from tuimon.runner.global_hooks import GlobalHook


def _warnings_of_a_compiled_call(model) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # as a fresh script's first call sees it
        # the filter stack catch_warnings saved still holds ours: re-arm it on the copy
        warnings.filters[:0] = [f for f in _ours()]
        model(torch.randn(2, 4))
    return [str(w.message) for w in caught if "global hooks" in str(w.message)]


def _ours():
    from tuimon.runner import global_hooks
    return [global_hooks._filter] if global_hooks._filter is not None else []


def test_the_warning_is_filtered_while_armed_and_the_filter_goes_with_the_last_hook():
    model = torch.compile(nn.Linear(4, 4), backend="eager")
    calls = []
    def seen(module, args):  # as tuimon's hooks are: a no-op inside a compiled frame
        if not torch.compiler.is_compiling():
            calls.append(type(module).__name__)

    first, second = GlobalHook(seen), GlobalHook(lambda m, a, o: None, after=True)
    assert _warnings_of_a_compiled_call(model) == []
    assert calls  # the hook fired
    first.remove()
    first.remove()  # idempotent: the count stays right
    assert _ours()  # one is still armed
    second.remove()
    assert not _ours()
    user = nn.modules.module.register_module_forward_pre_hook(lambda m, a: None)
    try:
        assert len(_warnings_of_a_compiled_call(model)) == 1  # the user's own hook: torch's warning
    finally:
        user.remove()
