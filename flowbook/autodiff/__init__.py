"""Reverse-mode differentiation: ``tf.gradients`` adds the backward ops to the graph.

``gradients`` walks back from ``ys`` and calls each op's registered gradient
function (declared with the op in its family); ``custom_gradient`` wraps a
function with its own gradient; ``gradient_checker`` compares the symbolic
gradients with finite differences (``tf.test.compute_gradient``)."""
