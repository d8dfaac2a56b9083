"""Writes tutorial 08 (run by a developer, then `ruff format tutorials`; the notebook is committed)."""

from _notebook import code, md, write

cells = [
    md("""# 8. Your TensorFlow 1 code, unchanged

Most TensorFlow 1 code in courses and example collections starts with `import tensorflow as tf`.
flowbook runs it without an edit: a script through `python -m flowbook.tf1`, a notebook after
the line magic `%flowbook_as_tensorflow`. Both make `import tensorflow` give flowbook (and
`tensorflow.compat.v1`, and `tensorflow.examples.tutorials.mnist.input_data`, answered by the
digits bundled with flowbook: 8×8 images scaled to 28×28, a stand-in for MNIST that never
downloads anything)."""),
    md("""## A script

`data/mnist_softmax.py` is a TF1-era script as people wrote them: flags, `tf.logging`,
`input_data.read_data_sets`, an `InteractiveSession`, `tf.app.run()`. Here it is, untouched:"""),
    code("""from pathlib import Path

print(Path("data/mnist_softmax.py").read_text())"""),
    md("""Run it with flowbook standing in for TensorFlow. From a terminal that is
`python -m flowbook.tf1 data/mnist_softmax.py --steps=200`; from here, the same command through
`subprocess`:"""),
    code("""import subprocess
import sys

run = subprocess.run(
    [sys.executable, "-m", "flowbook.tf1", "data/mnist_softmax.py", "--steps=200"],
    capture_output=True, text=True, timeout=300,
)
print(run.stdout)"""),
    md("""## A notebook

In a notebook, `%flowbook_as_tensorflow` does the same for this kernel: from now on
`import tensorflow as tf` is flowbook, so the graph grows in the live widget and the side
panel as the TF1 code builds it."""),
    code("""%flowbook_as_tensorflow
import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data

print(tf.__name__, "- the TF1 API:", tf.placeholder, tf.train.GradientDescentOptimizer)"""),
    code("""mnist = input_data.read_data_sets("/tmp/mnist_data", one_hot=True)
x = tf.placeholder(tf.float32, [None, 784], name="x")
y_ = tf.placeholder(tf.float32, [None, 10], name="y_")
with tf.name_scope("softmax"):
    W = tf.Variable(tf.zeros([784, 10]), name="W")
    b = tf.Variable(tf.zeros([10]), name="b")
    y = tf.matmul(x, W) + b
loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y))
train_step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1)), tf.float32))
graph_view = tf.show()
graph_view"""),
    md("""Train it as the TF1 tutorial did. The graph above lights up as it runs; its **Runs** row
keeps the steps, so after the cell you can pick one and **Replay** it."""),
    code("""sess = tf.InteractiveSession()
tf.global_variables_initializer().run()
for _ in range(200):
    batch_xs, batch_ys = mnist.train.next_batch(100)
    sess.run(train_step, feed_dict={x: batch_xs, y_: batch_ys})
print("test accuracy", sess.run(accuracy, {x: mnist.test.images, y_: mnist.test.labels}))"""),
    md("""`%flowbook_as_tensorflow off` removes the alias (a module that already imported
`tensorflow` keeps what it got). How much of TensorFlow 1's API flowbook has is in the README's
*TF1 compatibility* table; a missing name is an `AttributeError` naming it."""),
    code("""%flowbook_as_tensorflow off
sess.close()"""),
]

write("08_your_tf1_code.ipynb", cells)
