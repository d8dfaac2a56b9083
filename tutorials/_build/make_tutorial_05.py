"""Writes tutorial 05 (run by a developer, then `ruff format tutorials`; the notebook is committed)."""

from _notebook import code, md, write

cells = [
    md("""# 5. Where does the time go, and where does it break?

Two questions every model raises sooner or later. flowbook answers both on the graph itself:

- **timings**: every op of a run, when it started and ended, on which thread — as a table, a
  timeline, and a trace file for Perfetto / `chrome://tracing`;
- **stepping**: run a graph one op at a time, look at any intermediate value, stop at the first
  op that produces NaN or Inf.

We use the digits MLP from tutorial 4."""),
    code("""import flowbook as tf
from flowbook.data.datasets import load_digits

digits = load_digits()
x = tf.placeholder(tf.float32, [None, 64], name="x")
labels = tf.placeholder(tf.int64, [None], name="labels")
with tf.name_scope("layer1"):
    w1 = tf.Variable(tf.truncated_normal([64, 128], stddev=0.1, seed=1), name="w")
    hidden = tf.nn.relu(tf.matmul(x, w1) + tf.Variable(tf.zeros([128]), name="b"))
with tf.name_scope("layer2"):
    w2 = tf.Variable(tf.truncated_normal([128, 10], stddev=0.1, seed=2), name="w")
    logits = tf.matmul(hidden, w2) + tf.Variable(tf.zeros([10]), name="b")
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
train_step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

sess = tf.Session()
sess.run(tf.global_variables_initializer())
batch_x, batch_y = digits.train.next_batch(100)
feed = {x: batch_x, labels: batch_y}
graph_view = tf.show()
graph_view"""),
    md("""## Profile a training step

Everything run inside `with tf.profile()` is timed, op by op. The table sums the time per op
type (click a column header to sort); the timeline draws each op as a bar on the thread that ran
it."""),
    code("""with tf.profile() as prof:
    for _ in range(20):
        sess.run(train_step, feed)
prof.table(by="type")"""),
    code("prof.table(by=\"op\")"),
    code("prof.timeline()"),
    md("""The same times, as a heat map on the graph: hotter colours are slower ops (scroll up to the
graph above, or look at the side panel)."""),
    code("graph_view.show_times(prof)"),
    md("""The same data as a trace file: open `https://ui.perfetto.dev` (or `chrome://tracing`) and load
it. Each thread is a lane, and arrows follow the tensors from op to op. The file goes to a scratch
folder outside the tutorials (the cell prints where)."""),
    code("""import tempfile
from pathlib import Path

trace_path = Path(tempfile.gettempdir()) / "flowbook-scratch" / "train_step_trace.json"
trace_path.parent.mkdir(exist_ok=True)
prof.save_trace(trace_path)
print(trace_path)
print(trace_path.read_text()[:200], "...")"""),
    md("""TensorFlow 1 programs ask for the same thing with `RunOptions` and `RunMetadata`; that works
unchanged:"""),
    code("""times = {}  # op name -> its time in each traced run, µs
for _ in range(5):
    run_metadata = tf.RunMetadata()
    sess.run(
        train_step,
        feed,
        options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
        run_metadata=run_metadata,
    )
    for s in run_metadata.step_stats.dev_stats[0].node_stats:
        times.setdefault(s.node_name, []).append(s.op_end_rel_micros - s.op_start_rel_micros)
median = {name: sorted(t)[len(t) // 2] for name, t in times.items()}
for name in sorted(median, key=median.get)[-3:]:
    print(f"{name:45} median {median[name]:4} µs   runs: {times[name]}")
trace = tf.timeline.Timeline(run_metadata.step_stats).generate_chrome_trace_format()"""),
    md("""One run's times are noisy, the first one's most: after a pause the caches are cold and the
threads of the matrix library have gone to sleep, so the first ops wait. Trace several runs and
read the median, or profile many steps as above, before deciding which op is slow."""),
    md("""## What the optimiser did to the backward pass

The profile above timed the graph **as written**: every op `tf.gradients` added, one by one. But
a training loop does not run that graph. From the second run with the same batch shape on,
flowbook runs an *optimised plan*: much of the backward pass is arithmetic on shapes (`Shape`,
`BroadcastGradientArgs`, `Reshape` targets) that the batch shape already decides, so it is worked
out once and kept as constants (**folded**); two ops computing the same thing run once
(**merged**); `Identity` ops and a variable's `read` snapshot are **removed**. TensorFlow does
the same and never shows it; here you can look. `tf.optimized_plan` asks the optimiser what it
would do with this run (nothing is trained):"""),
    code("""rewrite = tf.optimized_plan(train_step, feed, session=sess)
print(rewrite.summary())
rewrite.by_type()"""),
    md("""One sentence per rewrite, naming the op it changed (the first few):"""),
    code("""for note in rewrite.notes[:10]:
    print(note)"""),
    md("""On the graph: `tf.show(rewrite)` draws it **as optimised**: folded values become constant boxes
beside the (dimmed) ops that made them, merged and removed ops disappear, and the list on the
left has the sentences (click one to find its op). **As written** in the toolbar switches back;
the side panel gets the same toggle."""),
    code("tf.show(rewrite)"),
    md("""To time what actually runs, profile with `optimized=True`. The first table counts the ops that
ran; the second gives each written op its time, and an op that stood for several written ones
(merged, or fused) has its time shared among them, marked in the `via` column."""),
    code("""with tf.profile(optimized=True) as prof_run:
    for _ in range(20):
        sess.run(train_step, feed)
prof_run.table(by="op")"""),
    code("prof_run.table(by=\"written\")"),
    md("""## Step through the graph

A `Stepper` runs the part of the graph a fetch needs, **one op at a time**. `ready()` shows the
ops whose inputs are all computed; `step()` runs one; `value()` shows any computed tensor."""),
    code("""st = tf.debug.Stepper(sess, loss, feed)
print("ready:", [op.name for op in st.ready()][:6])
for _ in range(5):
    print("ran", st.step().name)"""),
    md("""The stepper also lives **on the graph**: `tf.show(st)` adds Step / Run to selected /
Continue / Reset buttons. The op that just ran is highlighted, done ops are marked, ready ops are
outlined, and clicking a computed node shows a preview of its value."""),
    code("tf.show(st)"),
    md("`run_to` runs exactly what one op needs, and nothing else. Then look inside:"),
    code("""st.run_to("layer1/Relu")
h = st.value("layer1/Relu:0")
print("hidden layer:", h.shape, f"{(h > 0).mean():.0%} of the units are active")"""),
    md("`cont()` finishes the run; its result is exactly what `sess.run` gives:"),
    code("""print(st.cont(), sess.run(loss, feed))"""),
    md("""## Find a planted NaN

Here is a bug: someone "normalised" the hidden layer with a square root of something that can be
negative. The loss becomes NaN — but which op made it? `check_numerics=True` stops the run at the
**first** op that produces NaN or Inf, and names it, its inputs and the line that created it."""),
    code("""bad_hidden = tf.sqrt(hidden - 0.5, name="normalise")
bad_loss = tf.reduce_mean(tf.matmul(bad_hidden, w2))
print("loss:", sess.run(bad_loss, feed))"""),
    code("""try:
    sess.run(bad_loss, feed, options=tf.RunOptions(check_numerics=True))
except tf.errors.InvalidArgumentError as e:
    print(e)"""),
    md("""On the graph widget above (and in the side panel), the `normalise` node is now red: the run
stopped there, and its details carry the same message."""),
    md("""## Print from inside the graph

`tf.Print` passes its input through and prints values as the graph runs; the text lands here, in
the output of the cell that called `run`."""),
    code("""shown = tf.Print(loss, [loss, tf.reduce_max(logits)], message="loss, max logit: ")
sess.run(shown, feed)
sess.close()"""),
]

write("05_debugging_and_timing.ipynb", cells)
