"""The sparse family: ``SparseTensor`` ops, conversions and reductions."""
