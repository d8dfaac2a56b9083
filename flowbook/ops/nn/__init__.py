"""The neural-net family: activations, convolution, pooling, normalisation, losses,
dropout, embeddings, fake quantisation, and the fused ops the optimiser makes."""
