"""The control-flow family: the whitepaper's primitives, ``cond``/``while_loop``,
TensorArrays, ``map_fn``/``scan``, and the gradient of a loop."""
