"""The checking family: ``Assert`` and ``tf.assert_*``, ``Print``/``tf.print``,
``check_numerics``, and Python functions as ops (``py_func``)."""
