"""What a program needs from its platform: files, logging, flags and the app runner.

``gfile`` (TensorFlow's file API), ``files`` (atomic writes), ``tf_logging``
(``tf.logging``), ``flags`` (``tf.flags`` on absl) and ``app`` (``tf.app.run``)."""
