"""The linear-algebra family: MatMul, decompositions, solves, diagonals and ``einsum``."""
