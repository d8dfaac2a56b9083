"""Writes tutorial 06 (run by a developer, then `ruff format tutorials`; the notebook is committed)."""

from _notebook import code, md, write

cells = [
    md("""# 6. Running on a GPU

flowbook runs its kernels on an NVIDIA GPU through **CuPy**, numpy's GPU twin: every kernel is
written once against an array module `xp`, which is numpy on the CPU and CuPy on the GPU. CuPy is
an optional extra:

```bash
pip install -e ".[gpu]"      # cupy-cuda12x; flowbook imports and runs without it
```

This notebook runs on any machine. **Without a GPU it runs on the CPU and says so**, and where it
needs a GPU to show something (placement, the copies between host and device, the device's lane
in a trace, running out of device memory) it uses a *simulated* GPU: numpy arrays behind a device
boundary that refuses to mix with host arrays, as CuPy does. Placement, copies, freeing and traces
are then the same code as on a real GPU; only the array module differs. Timings measured on the
simulation are CPU timings and say nothing about GPU speed."""),
    code("""import numpy as np

import flowbook as tf
from flowbook.data.datasets import load_digits
from flowbook.framework.devices import gpu_available
from flowbook.runtime.gpu_sim import simulate_gpu

HAVE_GPU = gpu_available()
if HAVE_GPU:
    print("A GPU was found: the cells below run on it.")
else:
    print("No GPU was found on this machine (or CuPy is not installed): flowbook runs on the CPU.")
    print("Below, a simulated GPU stands in where a GPU is needed; its timings are CPU timings.")
with tf.Session() as sess:
    for d in sess.list_devices():
        print(f"{d.name}  ({d.device_type})")"""),
    md("""## Device scopes and soft placement

As in TensorFlow 1, `tf.device(...)` asks for a device. Asking for a GPU that does not exist is an
error naming the op and the line that created it:"""),
    code("""x = tf.placeholder(tf.float32, [None, 64], name="x")
w = tf.ones([64, 32], name="w")
with tf.device("/gpu:0"):
    hidden = tf.nn.relu(tf.matmul(x, w, name="matmul"), name="hidden")
feed = {x: np.ones((4, 64), np.float32)}
try:
    with tf.Session() as sess:
        sess.run(hidden, feed)
    print("hidden ran on /gpu:0")
except tf.errors.InvalidArgumentError as e:
    print(e.message)"""),
    md("""`allow_soft_placement=True` lets such ops run elsewhere (the CPU, without a GPU), and
`log_device_placement=True` prints where every op of a run went, here in the cell:"""),
    code("""config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=True)
with tf.Session(config=config) as sess:
    print(sess.run(hidden, feed).shape)"""),
    md("""## A model on the GPU

From here on the cells run on the GPU: the real one if there is one, else the simulated one.
Without a `tf.device` scope, ops go to the **first GPU** (as in TensorFlow), except:

- ops with no GPU kernel (`tf.Print`, anything on strings such as summaries) stay on the CPU;
- shape arithmetic stays on the host (int32 `Shape`, `BroadcastGradientArgs`... TensorFlow keeps
  int32 tensors of GPU kernels in host memory), so the GPU never waits for it;
- ops that update a variable run where the variable lives."""),
    code("""gpu = None if HAVE_GPU else simulate_gpu()
print("running on:", "the GPU" if HAVE_GPU else f"a simulated GPU ({gpu.description})")

tf.reset_default_graph()
digits = load_digits()
rng = np.random.default_rng(0)  # initial weights from the host: the same on every device
x = tf.placeholder(tf.float32, [None, 64], name="x")
labels = tf.placeholder(tf.int64, [None], name="labels")
with tf.name_scope("layer1"):
    w1 = tf.Variable((rng.standard_normal([64, 64]) * 0.1).astype(np.float32), name="w")
    hidden = tf.nn.relu(tf.matmul(x, w1) + tf.Variable(tf.zeros([64]), name="b"))
with tf.name_scope("layer2"):
    w2 = tf.Variable((rng.standard_normal([64, 10]) * 0.1).astype(np.float32), name="w")
    logits = tf.matmul(hidden, w2) + tf.Variable(tf.zeros([10]), name="b")
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
train_step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
batch_x, batch_y = digits.train.next_batch(100)
feed = {x: batch_x, labels: batch_y}"""),
    md("""Where a value crosses devices, the run gets a **copy node** of its own: TensorFlow's
Send/Receive pair as one op, named after the value it copies (`x/_copy_to_GPU_0`) and typed by
direction (`_CopyHostToDevice`, `_CopyDeviceToHost`). Fed values go up once; only the values you
fetch come back down; everything in between stays on the device.

Draw the graph before running it: once the next cell has run, each copy shows as a purple hexagon
on the edge it splits, and each op carries the device it ran on (a coloured strip and a badge;
the legend at the bottom says which colour is which). Click a copy for its direction and value."""),
    code("tf.show()"),
    md("""The placement log shows the same, in text:"""),
    code("""sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
sess.run(tf.global_variables_initializer())
print("loss:", sess.run(loss, feed))"""),
    md("""The first lines are the initializer's run; the second block is the loss: two uploads (`x`,
`labels`), the model on the GPU, one download (the loss). Training runs the same way and gives
the CPU's losses (exactly, on the simulation; to rounding, on a real GPU):"""),
    code("""def train(session, steps=30):
    session.run(tf.global_variables_initializer())
    return [session.run([loss, train_step], feed)[0] for _ in range(steps)]


sess.close()
with tf.Session() as on_gpu, tf.Session(config=tf.ConfigProto(device_count={"GPU": 0})) as on_cpu:
    gpu_losses, cpu_losses = train(on_gpu), train(on_cpu)
print("GPU:", np.round(gpu_losses[::10], 4))
print("CPU:", np.round(cpu_losses[::10], 4))
print("largest difference:", np.max(np.abs(np.subtract(gpu_losses, cpu_losses))))"""),
    md("""`ConfigProto(device_count={"GPU": 0})`, used above for the CPU session, turns the GPU off
for one session.

## Timings on the device

A GPU kernel launch returns before the kernel has run, so a host clock around it measures the
launch, not the work. A traced run (`FULL_TRACE`) therefore also times each GPU kernel on the
device itself, with CUDA events, and reports those times as a second device,
`.../device:GPU:0/stream:all`: the device's lane in the trace, as in TensorFlow's traces. The
ops on the CPU are the gradient's shape arithmetic."""),
    code("""sess = tf.Session()
sess.run(tf.global_variables_initializer())
run_metadata = tf.RunMetadata()
sess.run(
    train_step,
    feed,
    options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
    run_metadata=run_metadata,
)
for dev in run_metadata.step_stats.dev_stats:
    names = [n.node_name for n in dev.node_stats]
    print(f"{dev.device}: {len(names)} ops, e.g. {names[:3]}")
trace = tf.timeline.Timeline(run_metadata.step_stats).generate_chrome_trace_format()
with open("gpu_trace.json", "w") as f:
    f.write(trace)  # open in https://ui.perfetto.dev: the GPU's lane sits under its own process"""),
    md("""`tf.profile()` collects the same timings over many runs; its timeline draws the device's
lane under the host threads, and its tables count each GPU op's device time:"""),
    code("""with tf.profile() as prof:
    for _ in range(10):
        sess.run(train_step, feed)
prof.timeline()"""),
    code("""prof.table(by="type")"""),
    md("""## Copies, counted

The simulated GPU counts the copies its copy nodes make, which shows what reaches the host: one
download per fetched value, nothing for the values in between. A training step fetches nothing;
its third upload is a scalar: the batch size the mean's gradient divides by, counted on the host.
(On a real GPU the same plans run; only the counters are the simulation's.)"""),
    code("""sess.close()
if gpu is None:  # a real GPU ran the cells above: simulate one now (it stands in for the real one)
    gpu = simulate_gpu()
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for what, fetches in [
        ("loss", loss),
        ("loss, hidden", [loss, hidden]),
        ("train_step", train_step),
    ]:
        gpu.reset_counters()
        sess.run(fetches, feed)
        print(f"fetch {what:14} uploads {gpu.uploads}, downloads {gpu.downloads}")
gpu.remove()"""),
    md("""## Running out of device memory

A run that needs more device memory than there is stops with `ResourceExhaustedError`, naming the
op that could not get its memory and the line that created it. The run's device buffers are freed
at once, so the session goes on with a smaller batch. (A simulated GPU with 20 MB shows it.)"""),
    code("""small_gpu = simulate_gpu(memory_limit=20_000_000)
tf.reset_default_graph()
x = tf.placeholder(tf.float32, [None, 1000], name="x")
wide = tf.tile(tf.nn.relu(x), [1, 50], name="wide")  # 50 times the input
total = tf.reduce_sum(wide, name="total")
with tf.Session() as sess:
    try:
        sess.run(total, {x: np.ones((1000, 1000), np.float32)})  # 4 MB in, 200 MB for wide
    except tf.errors.ResourceExhaustedError as e:
        print(e.message)
    print("a smaller batch:", sess.run(total, {x: np.ones((10, 1000), np.float32)}))
    print("device memory in use after the runs:", small_gpu.live_bytes, "bytes")
small_gpu.remove()"""),
    md("""Within a run, each device buffer is freed after its last reader has run, so a long chain
holds two or three buffers at a time, not one per op.

`benchmarks/gpu.py` compares flowbook on the GPU with the CPU and with the same models written
directly in CuPy."""),
]

write("06_gpu.ipynb", cells)
