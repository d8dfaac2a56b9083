"""What one session holds between runs: variables' values, iterator positions,
queues, resource containers, and the results an op is still waiting for.

The op kernels (:mod:`flowbook.ops`) reach this state through the run's
context; a Session owns it and drops it on ``close``."""
