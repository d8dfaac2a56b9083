"""The random family: uniform, normal and truncated draws, shuffles, multinomials,
candidate samplers, all on TensorFlow's Philox stream."""
