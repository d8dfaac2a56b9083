"""Writes tutorial 12 (run by a developer, then `ruff format tutorials`; the notebook is committed)."""

from _notebook import code, md, write

cells = [
    md("""# 12. Bring your TensorFlow model

You trained a model with TensorFlow and want to look inside it: its graph, its values op by op,
where a training step spends its time. flowbook reads the files TensorFlow writes:

- **checkpoints** (`tf.train.Saver`, TensorFlow's V2 format: `.index` + `.data-…`),
- **meta graphs** (the `.meta` file beside a checkpoint: the whole graph, its collections and
  its Saver),
- **SavedModels** (`saved_model.pb` + `variables/`).

`data/tf_model/` holds a digits classifier that **TensorFlow 2.21** trained (in its TF1 graph
mode): 64 pixels → 32 relu units → 10 logits, 300 steps of gradient descent on the digits of
tutorial 3. Its `README.md` has the script that trained and saved it, and the test accuracy
TensorFlow measured: **0.92**."""),
    md("""## What is in the checkpoint?

Before loading anything, read the checkpoint's table of contents: each saved variable with its
shape. `latest_checkpoint` reads the small `checkpoint` file TensorFlow keeps beside it."""),
    code("""import numpy as np

import flowbook as tf
from flowbook.data.datasets import load_digits

digits = load_digits()  # the same split TensorFlow's script used
path = tf.train.latest_checkpoint("data/tf_model")
print(path)
for name, shape in tf.train.list_variables(path):
    print(f"  {name:12} {shape}")"""),
    md("""## Load the graph and its weights

`import_meta_graph` rebuilds TensorFlow's graph here, op for op, and returns the graph's own
Saver; `restore` fills the variables from the checkpoint. No line of the model is rewritten:
we find its tensors by the names TensorFlow gave them."""),
    code("""saver = tf.train.import_meta_graph(path + ".meta")
sess = tf.Session()
saver.restore(sess, path)

graph = tf.get_default_graph()
x = graph.get_tensor_by_name("x:0")
labels = graph.get_tensor_by_name("labels:0")
logits = graph.get_tensor_by_name("layer2/logits:0")
accuracy = graph.get_tensor_by_name("accuracy/mean:0")
graph_view = tf.show()
graph_view"""),
    md("""What to look at in the graph:

- the **name scopes** of TensorFlow's script are boxes: `layer1` and `layer2` (the model),
  `loss`, `accuracy`; click one to open it;
- **`train`** is what `minimize` added: the backward pass under `train/gradients` and one
  `ApplyGradientDescent` per variable;
- **`save`** is the Saver TensorFlow built: `SaveV2` and `RestoreV2` are ops too, and the
  `restore` above ran them;
- hover a node for its type and shape, and for the line that made it: here, the import cell.

The graph also carries TensorFlow's **collections**: the variables, the global step, the train
op."""),
    code("""for scope in ["layer1", "layer2", "loss", "accuracy", "train", "save"]:
    ops = [op for op in graph.get_operations() if op.name.startswith(scope + "/")]
    print(f"{scope:9} {len(ops):3} ops")
print("trainable:", [v.op.name for v in tf.trainable_variables()])
print("train_op: ", [op.name for op in tf.get_collection("train_op")])"""),
    md("""## Does it compute what TensorFlow computed?

Run the restored model on the test digits. The accuracy must be TensorFlow's, 0.92 (from
`data/tf_model/README.md`): same graph, same weights, same images."""),
    code("""tf_accuracy = 0.92  # data/tf_model/README.md
test = {x: digits.test.images, labels: digits.test.labels}
before = sess.run(accuracy, test)
print(f"flowbook: {before:.4f}   TensorFlow: {tf_accuracy:.4f}")
assert abs(before - tf_accuracy) < 0.005"""),
    md("A few test images, with what the model says they are:"),
    code("""some = digits.test.images[:10]
predicted = sess.run(logits, {x: some}).argmax(axis=1)
print("label:    ", digits.test.labels[:10])
print("predicted:", predicted)"""),
    md("""## Step through one forward pass

A `Stepper` (tutorial 5) runs the ops one image needs, one at a time: first the four variables
and their `read` snapshots, then `layer1`'s matrix multiply. On the graph below, Step, Run to
selected and Continue do the same; the op that just ran is highlighted, and a click on a computed
node shows its value."""),
    code("""one = {x: digits.test.images[:1]}
st = tf.debug.Stepper(sess, logits, one)
print("ready:", [op.name for op in st.ready()])
for _ in range(9):
    op = st.step()
    print(f"ran {op.name:16} {op.type}")
tf.show(st)"""),
    md("""Run to the hidden layer and look at it: which of the 32 units does this image turn on?"""),
    code("""st.run_to("layer1/hidden")
h = st.value("layer1/hidden:0")
print("active units:", np.flatnonzero(h[0] > 0))"""),
    md("`cont()` finishes the pass; the logits are exactly what `sess.run` gives:"),
    code("""stepped = st.cont()
print(stepped.round(2))
assert np.array_equal(stepped, sess.run(logits, one))"""),
    md("""## Profile a training step

The train op is the graph's own: `minimize` in TensorFlow's script made
`train/GradientDescent`, which adds 1 to the global step once the four weight updates are done
(TensorFlow also put it in the `train_op` collection). Time one step of it, op by op (this step
trains: the model moves by one batch)."""),
    code("""train_op = graph.get_operation_by_name("train/GradientDescent")
assert train_op in tf.get_collection("train_op")
batch_x, batch_y = digits.train.next_batch(100)
with tf.profile() as prof:
    sess.run(train_op, {x: batch_x, labels: batch_y})
prof.table(by="op")"""),
    md("""The same times as heat on the graph above (scroll up, or look at the side panel): the
backward pass under `train` costs more than the forward pass. One step's times are noisy; profile
many steps before deciding which op is slow (tutorial 5)."""),
    code("graph_view.show_times(prof)"),
    md("""## Fine-tune it

TensorFlow stopped after 300 steps. Go on training with the same train op, 300 steps more, and
measure again."""),
    code("""for _ in range(300):
    batch_x, batch_y = digits.train.next_batch(100)
    sess.run(train_op, {x: batch_x, labels: batch_y})
after = sess.run(accuracy, test)
print("global step:", sess.run("global_step:0"))
print(f"test accuracy: {before:.4f} -> {after:.4f}")
assert after > before"""),
    md("""## Save it for TensorFlow

The graph's own Saver writes a TensorFlow checkpoint and, with `write_meta_graph=True`, the
`.meta` beside it; `simple_save` writes a SavedModel for serving. They go to a scratch folder
(the cell prints where)."""),
    code("""import os
import tempfile

out = tempfile.mkdtemp(prefix="flowbook-tf-model-")
saved = saver.save(sess, os.path.join(out, "digits.ckpt"), write_meta_graph=True)
tf.saved_model.simple_save(
    sess, os.path.join(out, "saved_model"), inputs={"x": x}, outputs={"logits": logits}
)
print(saved)
for root, _, files in sorted(os.walk(out)):
    for f in sorted(files):
        print(f"  {os.path.relpath(os.path.join(root, f), out):45} {os.path.getsize(os.path.join(root, f)):6} bytes")"""),
    md("""Check the SavedModel the way a server would: load it into a fresh graph and session, find the
tensors through its signature, and measure."""),
    code("""with tf.Graph().as_default(), tf.Session() as serving:
    meta = tf.saved_model.loader.load(
        serving, [tf.saved_model.tag_constants.SERVING], os.path.join(out, "saved_model")
    )
    signature = meta.signature_def["serving_default"]
    served = serving.run(signature.outputs["logits"].name, {signature.inputs["x"].name: digits.test.images})
print("served accuracy:", (served.argmax(axis=1) == digits.test.labels).mean().round(4))
sess.close()"""),
    md("""## Back in TensorFlow

TensorFlow reads these files as its own. In a Python with TensorFlow 2 installed, with `out` the
folder printed above, and `test_x`, `test_y` the test digits (split as the script in
`data/tf_model/README.md` does):

```python
import tensorflow as tf

v1 = tf.compat.v1
v1.disable_v2_behavior()

with tf.Graph().as_default(), v1.Session() as sess:
    saver = v1.train.import_meta_graph(out + "/digits.ckpt.meta")
    saver.restore(sess, out + "/digits.ckpt")
    print(sess.run("accuracy/mean:0", {"x:0": test_x, "labels:0": test_y}))
    print(sess.run("global_step:0"))  # 601: TensorFlow's 300, then 1 + 300 here

with tf.Graph().as_default(), v1.Session() as sess:  # or the SavedModel, as a server loads it
    meta = v1.saved_model.loader.load(sess, ["serve"], out + "/saved_model")
    signature = meta.signature_def["serving_default"]
    logits = sess.run(signature.outputs["logits"].name, {signature.inputs["x"].name: test_x})
    print((logits.argmax(axis=1) == test_y).mean())
```

Both print the fine-tuned accuracy measured above."""),
]

write("12_bring_your_tensorflow_model.ipynb", cells)
