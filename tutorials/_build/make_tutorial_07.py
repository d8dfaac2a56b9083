"""Writes tutorial 07 (run by a developer, then `ruff format tutorials`; the notebook is committed)."""

from _notebook import code, md, write

cells = [
    md("""# 7. Protocol Buffers and TensorBoard

A TensorFlow graph travels as a **`GraphDef`**: a Protocol Buffers message holding one `NodeDef`
per op (its name, op type, inputs and attributes). flowbook reads and writes the same messages,
so graphs move between flowbook and TensorFlow, and training writes the **event files**
TensorBoard reads — while also drawing the curves right here in the notebook."""),
    code("""import numpy as np

import flowbook as tf"""),
    md("## Look at a graph's protobuf\n\nThe counter from tutorial 1, as TensorFlow would store it:"),
    code("""state = tf.Variable(0, name="counter")
one = tf.constant(1, name="one")
update = tf.assign(state, tf.add(state, one), name="update")

graph_def = tf.get_default_graph().as_graph_def()
print(len(graph_def.node), "nodes")
print(graph_def.node[-1])   # the Assign: its inputs are names, "op:index" """),
    md("Write it out, as text (readable) and binary (compact):"),
    code("""text_path = tf.train.write_graph(graph_def, "logs", "counter.pbtxt", as_text=True)
binary_path = tf.train.write_graph(graph_def, "logs", "counter.pb", as_text=False)
with open(text_path) as f:
    print(f.read()[:300])"""),
    md("""## Import a model frozen by TensorFlow

`data/tf_mlp.pb` was written by TensorFlow itself: a small MLP with its weights frozen into
constants (`MatMul`, `BiasAdd`, `Relu`, `Softmax`...). `import_graph_def` rebuilds it in flowbook,
under the name scope `tf/`, and it computes what TensorFlow computed."""),
    code("""tf.reset_default_graph()
with open("data/tf_mlp.pb", "rb") as f:
    frozen = f.read()
x, probs = tf.import_graph_def(frozen, return_elements=["x:0", "probs:0"], name="tf")
print([op.type for op in tf.get_default_graph().get_operations()])

expected = np.load("data/tf_mlp.npz")
with tf.Session() as sess:
    got = sess.run(probs, {x: expected["x"]})
print("flowbook:  ", got[0].round(4))
print("TensorFlow:", expected["probs_0"][0].round(4))
assert np.allclose(got, expected["probs_0"], rtol=1e-5)"""),
    md("""## Train with live summaries

`tf.summary.scalar` and `tf.summary.histogram` add summary ops; `merge_all` runs them together.
A `FileWriter` writes them to an event file for TensorBoard — and with `live=True` it also draws
them below the cell while the loop runs (a few updates a second, so watching costs little)."""),
    code("""from flowbook.data.datasets import load_digits

tf.reset_default_graph()
digits = load_digits()
x = tf.placeholder(tf.float32, [None, 64], name="x")
labels = tf.placeholder(tf.int64, [None], name="labels")
with tf.name_scope("model"):
    W = tf.Variable(tf.zeros([64, 10]), name="W")
    b = tf.Variable(tf.zeros([10]), name="b")
    logits = tf.matmul(x, W) + b
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
train_step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)

tf.summary.scalar("loss", loss)
tf.summary.histogram("W", W)
merged = tf.summary.merge_all()

sess = tf.Session()
sess.run(tf.global_variables_initializer())
with tf.summary.FileWriter("logs/digits", sess.graph, live=True) as writer:
    for step in tf.summary.progress(range(200), desc="training"):
        bx, by = digits.train.next_batch(100)
        summary, _ = sess.run([merged, train_step], {x: bx, labels: by})
        if step % 5 == 0:
            writer.add_summary(summary, step)"""),
    md("""The event file is what TensorBoard opens (`tensorboard --logdir logs`): the loss curve, the
histograms of `W` over the steps, and the graph."""),
    code("""import os

print(sorted(os.listdir("logs/digits")))
accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
print("test accuracy:", sess.run(accuracy, {x: digits.test.images, labels: digits.test.labels}))
sess.close()"""),
]

write("07_protobuf_and_tensorboard.ipynb", cells)
