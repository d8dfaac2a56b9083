"""TF1's namespaces: ``tf.nn``, ``tf.math``, ``tf.linalg``, ``tf.strings``, ``tf.io``...

Each module here is one namespace and holds names only: it re-exports the
wrappers the op families (:mod:`flowbook.ops`) and the nets
(:mod:`flowbook.nets`) define, under the names TensorFlow 1 gives them.
``flowbook/__init__.py`` binds them as ``tf.nn``, ``tf.math``... No logic
lives here, so a name's meaning is found where the op is declared."""
