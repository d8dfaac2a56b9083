"""The state family: variables and their updates, scatters, the optimizers' update
ops, and gradient accumulators."""
