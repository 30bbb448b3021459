"""What *runs* a session, live: the supervisor and its plan, the schedule of turns, child processes
and their pipes, torchrun jobs of ranks, stopping, the control socket, the probe sampler and the
daemon of a detached session. Never imports torch; reads answers from ``tuimon.analysis`` only
through that package's public names."""
