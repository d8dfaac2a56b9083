"""Image, audio, text and tensor summaries, and run metadata, as TensorBoard reads them."""

from __future__ import annotations

import io
import wave

import numpy as np
import pytest
from tensorboard.backend.event_processing import event_accumulator as ea

import flowbook as tf


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> ea.EventAccumulator:
    logdir = str(tmp_path_factory.mktemp("media"))
    rng = np.random.default_rng(0)
    with tf.Graph().as_default() as g, tf.Session() as s:
        tf.summary.image("pics", tf.constant(rng.random((2, 4, 5, 3), np.float32)))
        tf.summary.image("one", tf.zeros([3, 2, 2, 1], tf.uint8), max_outputs=1)
        clip = np.sin(np.linspace(0, 20, 800, dtype=np.float32)).reshape(1, 800)
        tf.summary.audio("snd", tf.constant(clip), 8000)
        tf.summary.text("note", tf.constant("**hi**"))
        tf.summary.tensor_summary("w", tf.ones([2, 2]))
        md = tf.RunMetadata()
        out = s.run(tf.summary.merge_all(), options=tf.RunOptions(trace_level=3), run_metadata=md)
        with tf.summary.FileWriter(logdir, g) as w:
            w.add_summary(out, 1)
            w.add_run_metadata(md, "step1", global_step=1)
    acc = ea.EventAccumulator(logdir, size_guidance={ea.TENSORS: 0})
    return acc.Reload()


def test_tags_as_tensorflow_names_them(written):
    tags = written.Tags()
    assert tags["images"] == ["pics/image/0", "pics/image/1", "one/image"]
    assert tags["audio"] == ["snd/audio/0"] and tags["run_metadata"] == ["step1"]
    assert set(tags["tensors"]) == {"note", "w"}


def test_images_are_png(written):
    image = written.Images("pics/image/1")[0]
    assert (image.height, image.width) == (4, 5)
    assert image.encoded_image_string.startswith(b"\x89PNG\r\n\x1a\n")


def test_audio_is_wav(written):
    audio = written.Audio("snd/audio/0")[0]
    with wave.open(io.BytesIO(audio.encoded_audio_string)) as w:
        assert (w.getframerate(), w.getnframes(), w.getnchannels()) == (8000, 800, 1)
    assert audio.content_type == "audio/wav"


def test_text_has_the_text_plugin(written):
    assert written.SummaryMetadata("note").plugin_data.plugin_name == "text"
    assert list(written.Tensors("note")[0].tensor_proto.string_val) == [b"**hi**"]


def test_run_metadata_reads_back(written):
    stats = written.RunMetadata("step1").step_stats
    assert stats.dev_stats[0].node_stats
