"""Writes tutorial 11 (run by a developer, then `ruff format tutorials`; the notebook is committed)."""

from _notebook import code, md, write

cells = [
    md("""# 11. Beyond one machine: parameter servers and workers on a Dask cluster

A model too big or too slow for one machine is split over several **tasks** (the whitepaper's
sections 3.3 and 7):

- a **parameter server** (`ps`) task holds the variables;
- **worker** tasks compute: each takes the current weights, runs the forward and backward pass
  on its share of the data and sends its gradients back to the ps.

flowbook runs these tasks on a [Dask](https://distributed.dask.org) cluster: each task is a Dask
worker, and a session run is split into one piece per task, with `_Send`/`_Recv` pairs where a
value crosses from one task to another. In this notebook the whole cluster runs on this machine
(loopback), so it works in a classroom; the same code runs on real machines.

You need Dask's `distributed` package: `pip install -e ".[dask]"`."""),
    code("""import collections
import contextlib
import io
import multiprocessing
import os
import shutil
import tempfile
import threading
import time

import numpy as np
from distributed import Client, LocalCluster
from IPython.display import display

import flowbook as tf
from flowbook.data.datasets import load_digits"""),
    md("""## A cluster of three tasks

A `LocalCluster` starts a Dask scheduler and worker processes on this machine. We name the
workers after the tasks they will be: `ps-0`, `worker-0` and `worker-1`. That is all flowbook
needs: a session on this cluster reads the tasks from the worker names.

Each worker runs under a **nanny**, a small process that starts it again (under the same name)
if it dies: we will need that at the end. The scheduler serves Dask's **dashboard** (a free
port, `:0`): open its link in another tab to watch the workers' load, memory and tasks while
the notebook trains."""),
    code("""cluster = LocalCluster(
    n_workers=0, processes=True, threads_per_worker=1,
    host="127.0.0.1", dashboard_address="127.0.0.1:0", worker_dashboard_address=None,
)  # fmt: skip
for name in ("ps-0", "worker-0", "worker-1"):
    cluster.worker_spec[name] = cluster.new_spec  # a worker process named after its task
cluster.scale(3)
client = Client(cluster, set_as_default=False)
client.wait_for_workers(3, timeout=120)  # starting three processes takes a few seconds
print("Dask dashboard:", client.dashboard_link)

with tf.Session(client, graph=tf.Graph()) as sess:  # tf.Session("dask://host:8786") works too
    print(sess.cluster.as_dict())  # job -> the Dask worker address of each task
    for device in sess.list_devices():
        print(device.name)
    display(sess)  # its tasks, their colours in the live graph, and the dashboard's link"""),
    md("""## The digits, the MLP and its single-machine twin

The model of tutorial 4: 64 pixels → 128 ReLU units → 10 classes, trained by gradient descent.
To compare the cluster with one machine exactly, every way of training below sees the same 40
batches of 100 digits and starts from the same seeded weights.

First the **twin**: the model trained in an ordinary local session."""),
    code("""digits = load_digits()
STEPS, BATCH, LR = 40, 100, 0.5
rng = np.random.default_rng(0)
picks = [rng.choice(len(digits.train.images), BATCH, replace=False) for _ in range(STEPS)]
batches = [(digits.train.images[p], digits.train.labels[p]) for p in picks]


def parameters():
    w1 = tf.Variable(tf.truncated_normal([64, 128], stddev=0.1, seed=1), name="w1")
    b1 = tf.Variable(tf.zeros([128]), name="b1")
    w2 = tf.Variable(tf.truncated_normal([128, 10], stddev=0.1, seed=2), name="w2")
    b2 = tf.Variable(tf.zeros([10]), name="b2")
    return [w1, b1, w2, b2]


def loss_of(params, x, y):
    w1, b1, w2, b2 = params
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))


with tf.Graph().as_default():
    params = parameters()
    x = tf.placeholder(tf.float32, [None, 64], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    loss = loss_of(params, x, y)
    train = tf.train.GradientDescentOptimizer(LR).minimize(loss)
    with tf.Session() as local:
        local.run(tf.global_variables_initializer())
        twin = [local.run([loss, train], {x: bx, y: by})[0] for bx, by in batches]
print(f"one machine: loss {twin[0]:.3f} at the first step, {twin[-1]:.3f} at the last")"""),
    md("""## Synchronous training, in-graph replication

One graph, one client, the whole cluster (the seeds' "multi-tower" pattern):

- the variables live on the ps: `tf.device("/job:ps/task:0")`;
- each worker gets a **tower**, a copy of the model reading half of each batch: 50 digits each;
- on the ps, the two towers' gradients are averaged and applied once.

The mean of two half-batch gradients is the gradient of the whole batch, so this must follow
the twin's loss curve, up to float32 round-off."""),
    code("""with tf.device("/job:ps/task:0"):
    params = parameters()
    global_step = tf.train.get_or_create_global_step()
towers = []
for k in range(2):
    with tf.device(f"/job:worker/task:{k}"), tf.name_scope(f"tower_{k}"):
        xk = tf.placeholder(tf.float32, [None, 64], name="x")
        yk = tf.placeholder(tf.int64, [None], name="y")
        lk = loss_of(params, xk, yk)
        towers.append((xk, yk, lk, tf.gradients(lk, params)))
with tf.device("/job:ps/task:0"), tf.name_scope("average"):
    mean_grads = [tf.add_n(gs) / 2.0 for gs in zip(*(t[3] for t in towers))]
    loss = tf.add_n([t[2] for t in towers]) / 2.0
    train = tf.train.GradientDescentOptimizer(LR).apply_gradients(
        zip(mean_grads, params), global_step=global_step
    )


def halves(bx, by):
    (x0, y0, *_), (x1, y1, *_) = towers
    return {x0: bx[:50], y0: by[:50], x1: bx[50:], y1: by[50:]}"""),
    md("""The live graph shows the model; once it has run, every op is tinted by the task it ran
on, and each value that crosses from one task to another gets a small box on its edge, its
`_Send`/`_Recv` pair ("send → worker:1"). Watch it light up while the next cell trains."""),
    code("""view = tf.show()
view"""),
    md("""Train it. `log_device_placement=True` makes the session print, as TensorFlow 1 does, the
task each op of a run was placed on (once per new kind of run): we keep the log of the first
training step for the next section."""),
    code("""sess = tf.Session(client, config=tf.ConfigProto(log_device_placement=True))
with contextlib.redirect_stdout(io.StringIO()):  # the initialisation's log: not needed
    sess.run(tf.global_variables_initializer())
sent_before = {task: stats["sent_bytes"] for task, stats in sess.task_stats().items()}
placement_log = io.StringIO()
with contextlib.redirect_stdout(placement_log):
    sync = [sess.run([loss, train], halves(bx, by))[0] for bx, by in batches]

print("step   one machine   2 workers, in-graph")
for k in range(0, STEPS, 5):
    print(f"{k:4d}   {twin[k]:11.5f}   {sync[k]:11.5f}")
print("largest relative difference:", max(abs(a - b) / a for a, b in zip(twin, sync)))
assert np.allclose(sync, twin, rtol=1e-5)"""),
    md("""## Where each op ran

Every op of the training step was placed on one task. The variables and the update sit on the
ps; each tower's forward and backward pass on its worker. Some ops moved on their own, as in
TensorFlow: a variable's read (`w1/read`) and the ops that update it always run where the
variable lives."""),
    code("""by_task = collections.defaultdict(list)
for line in placement_log.getvalue().splitlines():
    op, _, device = line.partition(": (")
    if device:  # "w1/read: (Identity): /job:ps/replica:0/task:0/device:CPU:0"
        by_task[device.rsplit(": ", 1)[1].split("/device")[0]].append(op)
for task, ops in sorted(by_task.items()):
    print(f"{task:30} {len(ops):3d} ops, e.g. {', '.join(ops[:4])}")"""),
    md("""Between the tasks, values travel by `_Send` and `_Recv`, worker to worker over Dask's
communication, never through this notebook: per step the ps sends the 9,610 weights (38 KB in
float32) to each worker, and each worker sends its gradients back. Only the fetched `loss` comes
back here. `task_stats()` counts the bytes each task sent:"""),
    code("""model_bytes = sum(int(np.prod(p.shape.as_list())) * 4 for p in params)
print(f"the model: {model_bytes:,} B")
for task, stats in sess.task_stats().items():
    per_step = (stats["sent_bytes"] - sent_before[task]) / STEPS
    print(f"{task:30} sent {per_step:7,.0f} B per step")"""),
    md("""## One trace for the whole cluster

`tf.profile()` times every op of every task and merges them into one timeline: a lane per task,
their clocks aligned with the client's, so a `_Recv` on a worker starts after the `_Send` on the
ps. You can see the step's shape: the ps sends the weights, both workers compute their tower at
the same time, then the ps averages and applies."""),
    code("""with tf.profile() as prof:
    for bx, by in batches[:5]:
        sess.run([loss, train], halves(bx, by))
prof.timeline()"""),
    md("""TensorFlow 1's way works too: `FULL_TRACE` gives one `RunMetadata` with a device per task,
and `tf.timeline.Timeline` turns it into a Chrome trace (a process per task: load it in
`https://ui.perfetto.dev`)."""),
    code("""run_metadata = tf.RunMetadata()
trace_everything = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
sess.run([loss, train], halves(*batches[0]), options=trace_everything, run_metadata=run_metadata)
for device in run_metadata.step_stats.dev_stats:
    print(f"{device.device:42} {len(device.node_stats):3d} ops timed")
trace = tf.timeline.Timeline(run_metadata.step_stats).generate_chrome_trace_format()
sess.close()"""),
    md("""## Between-graph replication: a client per worker

Large TF1 jobs were written differently: **each worker runs its own client** with its own copy of
the graph, and `tf.train.replica_device_setter` puts every variable on the ps and the rest on
that worker. Variables with the same name on the ps are the same variables, so all the workers
train one model. Each worker reads its own half of every batch.

Here the two workers' clients are two threads of this notebook; on real machines they are
separate processes, one per worker (see the README)."""),
    code("""def replica(task, sync):
    \"\"\"Worker `task`'s own graph: variables on the ps, its ops on its worker.\"\"\"
    graph = tf.Graph()
    setter = tf.train.replica_device_setter(ps_tasks=1, worker_device=f"/job:worker/task:{task}")
    with graph.as_default(), tf.device(setter):
        params = parameters()
        step = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [None, 64], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        loss = loss_of(params, x, y)
        opt = tf.train.GradientDescentOptimizer(LR)
        if sync:
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=2, total_num_replicas=2)
        train = opt.minimize(loss, global_step=step)
    return graph, x, y, loss, train, step, opt


def on_two_workers(work):
    \"\"\"Run `work(0)` and `work(1)` at once, each on its own thread (its own client).\"\"\"
    threads = [threading.Thread(target=work, args=(task,)) for task in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)


def half(task, k):
    bx, by = batches[k]
    rows = slice(0, 50) if task == 0 else slice(50, 100)
    return bx[rows], by[rows]"""),
    md("""### Synchronous: `SyncReplicasOptimizer`

TF1's classic synchronous training. Each worker wraps its optimizer in a
`tf.train.SyncReplicasOptimizer`: its train op pushes the worker's gradients into an
accumulator on the ps and waits. The **chief** (worker 0) averages the gradients once both
workers have pushed theirs, applies them, and hands each worker a token to start its next step.
`MonitoredTrainingSession` does the bookkeeping: the chief initialises the variables, the other
worker waits for that, and the optimizer's hook starts the chief's loop.

So that each worker contributes exactly one gradient to every update (a fast worker could
otherwise push two, as in TensorFlow), the two clients step in lockstep here, by a barrier.
A worker's first step takes one of the chief's initial tokens at once, so its next gradient may
be computed while the chief is still applying the first update: the accumulator drops such a
**stale** gradient and the step is done again. Each worker therefore reads the global step
before each run and trains on that step's batch. The mean of the two workers' losses at a step
is the loss of the whole batch: the twin's curve again."""),
    code("""lockstep = threading.Barrier(2)
sync_losses = {0: {}, 1: {}}  # worker -> {global step: its loss}


def sync_worker(task):
    graph, x, y, loss, train, step, opt = replica(task, sync=True)
    hooks = [opt.make_session_run_hook(is_chief=task == 0), tf.train.StopAtStepHook(last_step=STEPS)]
    with graph.as_default(), tf.train.MonitoredTrainingSession(
        master=client, is_chief=task == 0, hooks=hooks, save_summaries_steps=None,
        log_step_count_steps=None, max_wait_secs=60,
    ) as mon:  # fmt: skip
        while not mon.should_stop():
            lockstep.wait(60)
            k = int(mon.run(step))  # the step this gradient is for: train on its batch
            bx, by = half(task, k % STEPS)
            value, _ = mon.run([loss, train], {x: bx, y: by})
            sync_losses[task].setdefault(k, value)


on_two_workers(sync_worker)
replicated = [(sync_losses[0][k] + sync_losses[1][k]) / 2 for k in range(STEPS)]
print("step   one machine   SyncReplicasOptimizer, 2 clients")
for k in range(0, STEPS, 5):
    print(f"{k:4d}   {twin[k]:11.5f}   {replicated[k]:11.5f}")
assert np.allclose(replicated, twin, rtol=1e-5)"""),
    md("""### Asynchronous: nobody waits

Without `SyncReplicasOptimizer`, each worker applies its own gradient (of its own 50 digits) as
soon as it has it, and the weights may change between its read and its update: the whitepaper's
asynchronous data parallelism (figure 7). The chief initialises the variables first."""),
    code("""graph, *_ = replica(0, sync=False)
with graph.as_default(), tf.Session(client) as chief:
    chief.run(tf.global_variables_initializer())

async_losses = []  # (worker, loss) in the order the updates finished


def async_worker(task):
    graph, x, y, loss, train, *_ = replica(task, sync=False)
    with tf.Session(client, graph=graph) as s:
        for k in range(STEPS):
            bx, by = half(task, k)
            value, _ = s.run([loss, train], {x: bx, y: by})
            async_losses.append((task, value))


on_two_workers(async_worker)
with graph.as_default(), tf.Session(client) as chief:
    print("updates applied on the ps:", chief.run(tf.train.get_global_step()))  # 2 x 40: none lost
print("which worker's update came first:", "".join(str(w) for w, _ in async_losses[:20]), "...")"""),
    md("""The order of the updates changes from run to run, and so does the curve. Against the twin,
at the same number of digits seen (two half-batch updates per step of the twin):"""),
    code("""print("digits seen   one machine   asynchronous (mean of two updates)")
for k in range(0, STEPS, 5):
    pair = (async_losses[2 * k][1] + async_losses[2 * k + 1][1]) / 2
    print(f"{(k + 1) * BATCH:11,d}   {twin[k]:11.5f}   {pair:11.5f}")"""),
    md("""## When a task dies

A worker or a ps can die mid-training (the whitepaper's section 3.3): its machine reboots, its
process runs out of memory. Here we kill task processes for real: `client.run(os._exit, 1)`
ends a Dask worker's process at once, as a crash would. Its nanny notices and starts a new
process under the same name, at a new address, with nothing in it."""),
    code("""def kill(name):
    \"\"\"End the Dask worker process `name` at once; wait until the scheduler has seen it go.\"\"\"
    workers = client.scheduler_info()["workers"]
    address = next(a for a, w in workers.items() if w["name"] == name)

    def end():
        with contextlib.suppress(Exception):  # its connection closes: the call itself fails
            client.run(os._exit, 1, workers=[address])

    threading.Thread(target=end, daemon=True).start()
    deadline = time.monotonic() + 30
    while address in client.scheduler_info()["workers"] and time.monotonic() < deadline:
        time.sleep(0.05)
    print(f"killed {name} (it was {address})")"""),
    md("""### A plain session: the error names the task

A worker keeps nothing between steps: the weights live on the ps. We compute the loss of the
first batch, kill worker 1, and compute it again. The run fails with TensorFlow's
`UnavailableError`, naming the task that was lost, after 5 s: that long the client tries to
connect to the task's old address before it gives up (a worker that dies in the middle of a
step fails it as soon as its connection closes). The session stays
usable: its next run waits for Dask to bring back a worker named `worker-1`, starts a task
server there, and goes on, with the ps's weights as they were."""),
    code("""with tf.Session(client) as s:
    before = s.run(loss, halves(*batches[0]))
    kill("worker-1")
    started = time.monotonic()
    try:
        s.run(loss, halves(*batches[0]))
    except tf.errors.UnavailableError as e:
        print(f"{type(e).__name__} after {time.monotonic() - started:.1f} s: {e}")
    after = s.run(loss, halves(*batches[0]))
    print(f"the loss before: {before:.5f}, with the new worker-1: {after:.5f}")
    print("worker-1 is now", s.cluster.task_address("worker", 1))"""),
    md("""### A monitored session: back from the last checkpoint, by itself

The ps is another matter: its process holds the variables, and a new ps starts with none.
TensorFlow's answer is checkpoints. `tf.train.MonitoredTrainingSession` with a `checkpoint_dir`
saves every `save_checkpoint_steps` steps, and when a run fails because a task was lost
(`UnavailableError`) it does what TF1's monitored sessions do: it logs the error, waits for the
cluster to have its tasks back, makes a new session (which restores the latest checkpoint onto
the new ps) and runs the same call again. The training loop never sees the crash.

We train the in-graph model of before from the start, saving a checkpoint after every step,
and kill the ps after step 25. Each step reads the global step and trains on that step's
batch."""),
    code("""checkpoints = tempfile.mkdtemp(prefix="flowbook-tut11-")
steps, losses, took = [], [], []
with tf.train.MonitoredTrainingSession(
    master=client, checkpoint_dir=checkpoints, save_checkpoint_steps=1,
    save_summaries_steps=None, log_step_count_steps=None,
    hooks=[tf.train.StopAtStepHook(last_step=STEPS)],
) as mon:  # fmt: skip
    while not mon.should_stop():
        started = time.monotonic()
        step = mon.run(global_step)  # after the crash: the ps is lost, the session recovers
        value, _ = mon.run([loss, train], halves(*batches[step]))
        steps.append(step)
        losses.append(value)
        took.append(time.monotonic() - started)
        if step == 25:
            kill("ps-0")  # with the weights of step 26, and the checkpoint of step 26
print("steps run:", *steps[22:30], "...")
print("seconds per step:", *(f"{t:.2f}" for t in took[22:30]), "...")"""),
    md("""The warning above is the monitored session's log of the lost ps. The step after the crash
took a few seconds (5 s to give up on the old ps, then a new session on the new ps process,
with the checkpoint restored onto it), but no step was lost or done twice: the training went on from step 26 with the weights of step 26. So
the loss ends where the single machine's does:"""),
    code("""print(f"step {steps[-1]}: loss {losses[-1]:.5f} (one machine: {twin[steps[-1]]:.5f})")
assert steps == list(range(STEPS)) and np.isclose(losses[-1], twin[-1], rtol=1e-5)"""),
    md("""## Closing the cluster

Closing the client and the cluster stops the scheduler and the three worker processes
(and deletes the checkpoints)."""),
    code("""client.close()
cluster.close()
shutil.rmtree(checkpoints)
print("worker processes still running:", len(multiprocessing.active_children()))"""),
]

write("11_distributed.ipynb", cells)
