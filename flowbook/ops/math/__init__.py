"""The math family: element-wise ops (one row each), reductions, scans, segments,
special functions, complex numbers, FFTs, clipping and Python operators on tensors."""
