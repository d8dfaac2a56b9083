"""Writes tutorial 10 (run by a developer, then `ruff format tutorials`; the notebook is committed)."""

from _notebook import code, md, write

cells = [
    md("""# 10. Input pipelines: TFRecord files, queues and `tf.data`

So far every training step got its batch through `feed_dict`: Python picks 100 examples and
hands them to `sess.run`. TensorFlow 1 can also read its input **inside the graph**:

1. **queues** (the whitepaper's sections 4.5 and 4.6): readers pull records out of files named by
   a queue, parse them, and push examples into a shuffling queue; background threads
   (`QueueRunner`s, stopped by a `Coordinator`) keep it full while the model dequeues batches;
2. **`tf.data`**: a `Dataset` describes the same pipeline as a chain of transformations, and an
   iterator's `get_next()` hands out one batch per run, no threads to manage.

We write the digits to TFRecord files, train the softmax model of tutorial 3 from each pipeline,
and check that all three reach the same test accuracy as `feed_dict`."""),
    code("""import os
import shutil
import tempfile

import flowbook as tf
from flowbook.data.datasets import load_digits

view = tf.show()
view"""),
    md("""## The digits as TFRecord files

A TFRecord file is a sequence of records, each a serialized `tf.train.Example`: a map from
feature names to lists of floats, integers or bytes. We write the 1,347 training digits into two
files (in a scratch folder that we delete at the end), 64 pixels and a label per example."""),
    code("""digits = load_digits()
scratch = tempfile.mkdtemp(prefix="digits-tfrecords-")
files = [os.path.join(scratch, f"train-{k}.tfrecord") for k in range(2)]
for k, path in enumerate(files):
    with tf.python_io.TFRecordWriter(path) as writer:
        for image, label in zip(digits.train.images[k::2], digits.train.labels[k::2]):
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "image": tf.train.Feature(float_list=tf.train.FloatList(value=image)),
                        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                    }
                )
            )
            writer.write(example.SerializeToString())
print([f"{os.path.basename(f)}: {os.path.getsize(f):,} bytes" for f in files])

first = tf.train.Example.FromString(next(tf.python_io.tf_record_iterator(files[0])))
print("label of the first record:", first.features.feature["label"].int64_list.value[0])"""),
    md("""## One model, three ways to feed it

The model's variables `W` and `b` are made once; `model(x)` applies them to any batch of
images, whether it comes from a placeholder, a queue or an iterator. Each way gets its own
training op; `accuracy` measures the model on the 450 test digits, which none of the pipelines
ever sees. `parse_single_example` turns one serialized record back into tensors."""),
    code("""W = tf.Variable(tf.zeros([64, 10]), name="W")
b = tf.Variable(tf.zeros([10]), name="b")


def model(images):
    return tf.matmul(images, W) + b


def training(images, labels, name):
    with tf.name_scope(name):
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=model(images))
        )
        return tf.train.GradientDescentOptimizer(0.5).minimize(loss)


test_logits = model(tf.constant(digits.test.images, name="test_images"))
accuracy = tf.reduce_mean(
    tf.cast(tf.equal(tf.argmax(test_logits, 1), digits.test.labels), tf.float32), name="accuracy"
)
features = {
    "image": tf.FixedLenFeature([64], tf.float32),
    "label": tf.FixedLenFeature([], tf.int64),
}
STEPS = 300  # batches of 100: about 22 epochs of the training digits"""),
    md("""## 1. `feed_dict`, as before"""),
    code("""x = tf.placeholder(tf.float32, [None, 64], name="x")
y_ = tf.placeholder(tf.int64, [None], name="labels")
train_fed = training(x, y_, "feed_dict")

sess = tf.Session()
sess.run(tf.global_variables_initializer())
for _ in range(STEPS):
    batch_xs, batch_ys = digits.train.next_batch(100)
    sess.run(train_fed, feed_dict={x: batch_xs, y_: batch_ys})
accuracy_fed = sess.run(accuracy)
print(f"feed_dict: test accuracy {accuracy_fed:.3f}")"""),
    md("""## 2. A reader and a shuffle queue, filled by QueueRunners

- `string_input_producer` puts the file names in a queue (shuffled, over and over);
- a `TFRecordReader` takes a file name from it whenever it needs a new file, and `read` gives
  one serialized record per run;
- `shuffle_batch` pushes each parsed example into a `RandomShuffleQueue` and dequeues batches of
  100 drawn at random from at least `min_after_dequeue` examples.

Both queues come with a `QueueRunner` (in the graph's `QUEUE_RUNNERS` collection):
`start_queue_runners` starts their threads, which run the enqueue ops again and again. A
dequeue from a queue that does not yet hold enough waits, without holding a thread, until the
runners have filled it."""),
    code("""filename_queue = tf.train.string_input_producer(files, seed=1)
reader = tf.TFRecordReader()
_, serialized = reader.read(filename_queue)
example = tf.parse_single_example(serialized, features)
image_batch, label_batch = tf.train.shuffle_batch(
    [example["image"], example["label"]], batch_size=100, capacity=2000, min_after_dequeue=1000, seed=2
)
train_queued = training(image_batch, label_batch, "queues")

runners = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
print([qr.name for qr in runners])
level = runners[-1].queue.size()  # how many examples the shuffle queue holds"""),
    md("""Train from the queue. The first steps have to wait until the runners have put 1,100
examples into the shuffle queue; `tf.profile()` counts that waiting time apart from the kernels'
time, in a `waited_ms` column (its Chrome trace shows each wait as a slice of its own)."""),
    code("""sess.run(tf.global_variables_initializer())
coord = tf.train.Coordinator()
threads = tf.train.start_queue_runners(sess, coord)
with tf.profile() as prof:
    for _ in range(5):
        sess.run(train_queued)
print(prof.table(by="type"))
for step in range(5, STEPS):
    sess.run(train_queued)
    if step % 100 == 0:
        print(f"step {step:3d}: the shuffle queue holds {sess.run(level)} examples")
coord.request_stop()
coord.join(threads)
accuracy_queued = sess.run(accuracy)
print(f"queues:    test accuracy {accuracy_queued:.3f}")"""),
    md("""In the table, `QueueDequeueManyV2` (the training step's dequeue of a batch) waited while the
runners filled the shuffle queue, and `QueueEnqueueManyV2` (the file names going into their queue
of 32) waited for room: neither held a thread meanwhile. The profile counts every run in the
`with` block, the runners' own runs on their threads too: one read, parse and enqueue of one
example per run."""),
    md("""## 3. The same pipeline with `tf.data`

Files → records → parsed examples → shuffled → batches of 100, repeated for ever: each step is
a method of `Dataset`. The function given to `map` builds graph ops once; they run on the
executor for every element. No threads, no coordinator: the iterator keeps its place in the
session, and `get_next()` is a tensor like any other."""),
    code("""dataset = tf.data.TFRecordDataset(files).map(lambda record: tf.parse_single_example(record, features))
dataset = dataset.shuffle(2000, seed=3).batch(100).repeat()
batch = dataset.make_one_shot_iterator().get_next()
train_data = training(batch["image"], batch["label"], "tf_data")

sess.run(tf.global_variables_initializer())
for _ in range(STEPS):
    sess.run(train_data)
accuracy_data = sess.run(accuracy)
print(f"tf.data:   test accuracy {accuracy_data:.3f}")"""),
    md("""## The same model, the same accuracy

The three ways shuffle differently, so the models differ a little, but each saw the same
examples as often and reaches the same test accuracy:"""),
    code("""for how, acc in (("feed_dict", accuracy_fed), ("queues", accuracy_queued), ("tf.data", accuracy_data)):
    print(f"{how:10} {acc:.3f}")
assert abs(accuracy_queued - accuracy_fed) <= 0.02 and abs(accuracy_data - accuracy_fed) <= 0.02
sess.close()
shutil.rmtree(scratch)  # the TFRecord files"""),
]

write("10_input_pipelines.ipynb", cells)
