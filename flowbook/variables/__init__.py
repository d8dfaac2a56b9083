"""Variables: state that persists across runs, and the scopes that make and find them.

``variables`` (``tf.Variable`` and the collections), ``variable_scope`` and
``variable_store`` (``tf.get_variable``, reuse), ``initializers``."""
