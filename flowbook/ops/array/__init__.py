"""The array family: constants, placeholders, shapes, slicing, joining, filling, casting."""
