"""Writes tutorials 02-04 (run by a developer, then `ruff format tutorials`; the notebooks are committed).

Kept beside the notebooks so their text can be edited as code and regenerated:
``python tutorials/_build/make_training_tutorials.py``.
"""

from _notebook import code, md, write


write("02_linear_regression.ipynb", [
    md("""# 2. Linear regression: gradients are more graph

We make up data on the line `y = 0.1 x + 0.3`, then ask flowbook to find the slope `W` and the
intercept `b` by gradient descent. This is TensorFlow's very first example, unchanged.

The new idea: `optimizer.minimize(loss)` **adds the backward pass to the graph** (the whitepaper's
section 4.1). The gradients are ops like any other; the session runs them."""),
    code("""import numpy as np

import flowbook as tf

# Create 100 phony x, y data points: y = x * 0.1 + 0.3
x_data = np.random.default_rng(0).random(100).astype(np.float32)
y_data = x_data * 0.1 + 0.3

# Try to find values for W and b that compute y_data = W * x_data + b
W = tf.Variable(tf.random_uniform([1], -1.0, 1.0, seed=1), name="W")
b = tf.Variable(tf.zeros([1]), name="b")
y = W * x_data + b

# Minimize the mean squared error.
loss = tf.reduce_mean(tf.square(y - y_data))
optimizer = tf.train.GradientDescentOptimizer(0.5)
train = optimizer.minimize(loss)

init = tf.initialize_all_variables()"""),
    md("""The graph so far: the forward model, and under `gradients/` the backward pass that `minimize`
added (expand it with a click). Keep it in sight while the next cell trains: each step lights up
the ops it runs."""),
    code("tf.show()"),
    md("## Fit the line\n\nEach `sess.run(train)` is one step of gradient descent. Watch `W` go to 0.1 and `b` to 0.3."),
    code("""sess = tf.Session()
sess.run(init)
for step in range(201):
    sess.run(train)
    if step % 20 == 0:
        print(f"step {step:3d}  loss {sess.run(loss):.6f}  W {sess.run(W)[0]:.4f}  b {sess.run(b)[0]:.4f}")"""),
    md("""## What did `minimize` build?

`minimize` called `tf.gradients(loss, [W, b])`, which walked the graph backwards from `loss` and
added, for every op on the way, the ops computing its gradient, all under the name scope
`gradients/`. Then it added one update op per variable (`W -= 0.5 * dloss/dW`)."""),
    code("""graph = tf.get_default_graph()
forward = [op for op in graph.get_operations() if not op.name.startswith(("gradients", "GradientDescent"))]
backward = [op for op in graph.get_operations() if op.name.startswith("gradients/")]
print(len(forward), "forward ops,", len(backward), "gradient ops")
for op in backward[:8]:
    print(f"  {op.name:45} {op.type}")"""),
    md("You can ask for gradients yourself, and fetch them like any tensor:"),
    code("""dW, db = tf.gradients(loss, [W, b])
print("dloss/dW =", sess.run(dW), " dloss/db =", sess.run(db))
sess.close()"""),
])

write("03_digits_softmax.ipynb", [
    md("""# 3. Softmax regression on handwritten digits

The MNIST "hello world", made small: scikit-learn's 1,797 handwritten digits (8×8 pixels, shipped
with the package, no download) stand in for MNIST's 28×28. The model is one matrix multiply and a
softmax: `y = softmax(x W + b)`. We train it with minibatches of 100 for 200 steps."""),
    code("""import flowbook as tf
from flowbook.data.datasets import load_digits

digits = load_digits()
print("train:", digits.train.images.shape, " test:", digits.test.images.shape)
print("first label:", digits.train.labels[0])
print((digits.train.images[0].reshape(8, 8) * 9).round().astype(int))"""),
    md("## The model"),
    code("""x = tf.placeholder(tf.float32, [None, 64], name="x")   # a batch of images, flattened
y_ = tf.placeholder(tf.int64, [None], name="labels")     # their digits, 0-9

W = tf.Variable(tf.zeros([64, 10]), name="W")
b = tf.Variable(tf.zeros([10]), name="b")
logits = tf.matmul(x, W) + b
y = tf.nn.softmax(logits)

cross_entropy = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y_, logits=logits))
train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)

correct = tf.equal(tf.argmax(y, 1), y_)
accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))"""),
    md("""The model as a graph. Training runs `train_step`; evaluating runs `accuracy`: watch which part
of the graph each one lights up. A training step is over in well under a millisecond, so the
widget keeps its runs: once the cells below have run, the **Runs** row above the graph shows any
of them again, and **▶ Replay** plays one back op by op."""),
    code("""graph_view = tf.show()
graph_view"""),
    md("## Train\n\n`next_batch(100)` hands out shuffled minibatches; the loss is printed as training goes."),
    code("""sess = tf.Session()
sess.run(tf.global_variables_initializer())
for step in range(200):
    batch_xs, batch_ys = digits.train.next_batch(100)
    _, loss = sess.run([train_step, cross_entropy], feed_dict={x: batch_xs, y_: batch_ys})
    if step % 25 == 0:
        print(f"step {step:3d}  loss {loss:.4f}")"""),
    md("## Evaluate on digits the model never saw"),
    code("""test_accuracy = sess.run(accuracy, feed_dict={x: digits.test.images, y_: digits.test.labels})
print(f"test accuracy: {test_accuracy:.3f}")
assert test_accuracy >= 0.88"""),
    md("""## Look back at the runs

Every run is still there to show: pick one in the graph's **Runs** list. Run 1 is the
initializer (only the variables' initial values and assigns light up), runs 2 to 201 the training
steps (the forward pass, `gradients/` and the updates), run 202 the evaluation (the forward
pass and `accuracy`, while the gradients stay dimmed). **compare** outlines the ops whose value
or time differs between the run shown and another: a training step against the evaluation marks
the forward ops, which saw different digits. `graph_view.runs` holds the same records:"""),
    code("""runs = graph_view.runs
print(len(runs), "runs kept")
for run in (runs[0], runs[1], runs[-1]):
    print(f"run {run['seq']:3d}: fetched {', '.join(run['fetches'])}, {len(run['order'])} ops ran")
graph_view.replay(runs[-1])  # the evaluation, op by op, in the graph above"""),
    md("Each column of `W` is a template the model matched digits against. Here is the one for 0:"),
    code("""print(sess.run(W)[:, 0].reshape(8, 8).round(1))
sess.close()"""),
])

write("04_digits_deep.ipynb", [
    md("""# 4. Deeper: an MLP and a small convolutional network

"Deep MNIST for experts", made small for 8×8 digits. Two models, both trained with Adam:

1. a multilayer perceptron: 64 → 128 (ReLU) → 10;
2. a convolutional network: two 3×3 convolutions with ReLU and 2×2 max-pooling, then a dense layer.

Each model is built in a graph of its own (`tf.Graph()`), not the default graph, so the side panel
has nothing to show: `train_and_test` shows each model's graph in its cell with `tf.show(graph)`.
Watch it there while the model trains: each step lights up the ops it runs."""),
    code("""import flowbook as tf
from flowbook.data.datasets import load_digits

digits = load_digits()


def train_and_test(build, steps, lr=1e-3, every=100):
    \"\"\"Build a model in a fresh graph, show it, train it with Adam, return the test accuracy.\"\"\"
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        x = tf.placeholder(tf.float32, [None, 64], name="x")
        y_ = tf.placeholder(tf.int64, [None], name="labels")
        logits = build(x)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y_, logits=logits))
        train_step = tf.train.AdamOptimizer(lr).minimize(loss)
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y_), tf.float32))
        tf.show(graph)  # this model's graph, in the cell that trains it
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(steps):
                bx, by = digits.train.next_batch(100)
                _, batch_loss = sess.run([train_step, loss], {x: bx, y_: by})
                if step % every == 0:
                    print(f"step {step:4d}  loss {batch_loss:.4f}")
            return sess.run(accuracy, {x: digits.test.images, y_: digits.test.labels})"""),
    md("## The multilayer perceptron"),
    code("""def mlp(x):
    w1 = tf.Variable(tf.truncated_normal([64, 128], stddev=0.1), name="w1")
    b1 = tf.Variable(tf.constant(0.1, shape=[128]), name="b1")
    hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
    w2 = tf.Variable(tf.truncated_normal([128, 10], stddev=0.1), name="w2")
    b2 = tf.Variable(tf.constant(0.1, shape=[10]), name="b2")
    return tf.matmul(hidden, w2) + b2


mlp_accuracy = train_and_test(mlp, steps=400)
print(f"MLP test accuracy: {mlp_accuracy:.3f}")
assert mlp_accuracy >= 0.90"""),
    md("""## The convolutional network

Images become `[batch, 8, 8, 1]` tensors (NHWC). Each convolution slides 3×3 filters over them
(`padding="SAME"` keeps the size), each max-pool halves it: 8×8 → 4×4 → 2×2."""),
    code("""def weight(shape):
    return tf.Variable(tf.truncated_normal(shape, stddev=0.1))


def bias(shape):
    return tf.Variable(tf.constant(0.1, shape=shape))


def conv_net(x):
    image = tf.reshape(x, [-1, 8, 8, 1])
    h1 = tf.nn.relu(tf.nn.conv2d(image, weight([3, 3, 1, 16]), strides=[1, 1, 1, 1], padding="SAME") + bias([16]))
    p1 = tf.nn.max_pool(h1, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")   # 4x4x16
    h2 = tf.nn.relu(tf.nn.conv2d(p1, weight([3, 3, 16, 32]), strides=[1, 1, 1, 1], padding="SAME") + bias([32]))
    p2 = tf.nn.max_pool(h2, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")   # 2x2x32
    flat = tf.reshape(p2, [-1, 2 * 2 * 32])
    dense = tf.nn.relu(tf.matmul(flat, weight([128, 64])) + bias([64]))
    return tf.matmul(dense, weight([64, 10])) + bias([10])


cnn_accuracy = train_and_test(conv_net, steps=400, lr=3e-3)
print(f"CNN test accuracy: {cnn_accuracy:.3f}")
assert cnn_accuracy >= 0.95"""),
    md("""## The same network with `tf.layers`

Most TF1 code does not make its weights by hand: `tf.layers` makes them, names them
(`conv2d/kernel`, `conv2d/bias`, `dense/kernel`...) and initialises them (Glorot uniform, as
TensorFlow does). The same network in five layers; its variables are listed after training."""),
    code("""def layers_net(x):
    image = tf.reshape(x, [-1, 8, 8, 1])
    h = tf.layers.conv2d(image, 16, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.max_pooling2d(h, 2, 2, padding="same")  # 4x4x16
    h = tf.layers.conv2d(h, 32, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.max_pooling2d(h, 2, 2, padding="same")  # 2x2x32
    h = tf.layers.dense(tf.layers.flatten(h), 64, activation=tf.nn.relu)
    logits = tf.layers.dense(h, 10)
    print([v.name for v in tf.trainable_variables()])
    return logits


layers_accuracy = train_and_test(layers_net, steps=400, lr=3e-3)
print(f"tf.layers CNN test accuracy: {layers_accuracy:.3f}")
assert layers_accuracy >= 0.95"""),
])
