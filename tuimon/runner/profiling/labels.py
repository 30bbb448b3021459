"""The names the loop's labels and the module spans take in a trace: written by the capture and
the module hooks, read back by the analysis, so they live apart from both."""

LABEL = "tuimon: "  # the loop's own labels: data, forward, backward, optimizer, loss read
FWD, BWD = "forward: ", "backward: "  # module spans
SPLIT = ("data", "forward", "backward", "optimizer")
LOSS_READ = "loss read"  # the runner's own scalar read of the loss (CPU only; async on CUDA)
# A script's outermost module calls (outer_spans.py): "module: Vgg16", the trained one's with
# TRAINED after its name.
MODULE, TRAINED = "module: ", " (trained)"


def ours(name: str) -> bool:
    """A span tuimon opened (a step marker, a loop label or a module span), not the user's op."""
    return name.startswith(("ProfilerStep", LABEL, FWD, BWD, MODULE))
