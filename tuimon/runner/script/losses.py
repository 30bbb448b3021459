"""Which backward() losses make a script's step's loss (issue 40): each ``backward()``'s root
(the unscaled loss under a GradScaler) waits, detached, for the next optimizer ``step()``; the
lead's step takes those computed before its ``step()`` began and sums them (a closure's, as
LBFGS evaluates its again and again inside ``step()``: the first). So under gradient accumulation
the step's loss is the sum of its micro-batches' losses, which a script that scales each by 1/N
prints; a GAN's generator loss goes with the generator's step, not the critic's."""

from __future__ import annotations


class StepLosses:
    def __init__(self) -> None:
        self.pending: list = []  # roots since the last optimizer step, detached
        self.before: int | None = None  # of those, computed before an optimizer's step() began

    def backward(self, root) -> None:
        self.pending.append(root.detach())

    def stepping(self) -> None:
        """An optimizer's step() begins: what came before was computed outside it."""
        self.before = len(self.pending)

    def drop(self) -> None:
        """Another optimizer than the lead stepped: the losses were its."""
        self.pending, self.before = [], None

    def take(self) -> tuple:
        """The step ended: (its loss, a tensor or None; the count of backward() losses summed)."""
        pending, before = self.pending, self.before
        n = len(pending) if before is None else (before or 1)  # None: no step() began (by backward)
        self.drop()
        if not pending:
            return None, 0
        loss = pending[0]
        for more in pending[1:n]:
            loss = loss + more.to(loss.device)
        return loss, n
