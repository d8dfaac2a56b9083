"""``tf.losses``: per-example losses, weighted and reduced to one number.

``losses`` holds the classification losses, ``regression`` the regression
ones, ``reduction`` the weighting and reduction skeleton they share."""
