"""TF1's ``tf.contrib.tensorboard.plugins.projector``: configure TensorBoard's embedding projector.

``ProjectorConfig`` (and ``EmbeddingInfo``, ``SpriteMetadata``) are
TensorBoard's own protobuf messages, so a config built here is what the
projector plugin reads.  ``visualize_embeddings(writer, config)`` writes it as
text to ``projector_config.pbtxt`` in the writer's log directory, where the
plugin looks for it.

    >>> config = ProjectorConfig()
    >>> e = config.embeddings.add(); e.tensor_name = "emb"
    >>> config.embeddings[0].tensor_name
    'emb'
"""

from __future__ import annotations

import os
from typing import Any

from google.protobuf import text_format
from tensorboard.plugins.projector.projector_config_pb2 import (
    EmbeddingInfo,
    ProjectorConfig,
    SpriteMetadata,
)

from flowbook.platform.gfile import GFile, makedirs

__all__ = ["EmbeddingInfo", "ProjectorConfig", "SpriteMetadata", "visualize_embeddings"]

PROJECTOR_FILENAME = "projector_config.pbtxt"


def visualize_embeddings(summary_writer: Any, config: ProjectorConfig) -> None:
    """Write ``config`` to ``projector_config.pbtxt`` in ``summary_writer``'s log directory.

    ``summary_writer`` is a ``tf.summary.FileWriter`` (or anything with
    ``get_logdir()``); a plain path is taken as the log directory too.
    """
    get_logdir = getattr(summary_writer, "get_logdir", None)
    logdir = get_logdir() if get_logdir is not None else summary_writer
    if logdir is None:
        raise ValueError("Summary writer must have a logdir")
    logdir = os.fspath(logdir)
    makedirs(logdir)
    with GFile(os.path.join(logdir, PROJECTOR_FILENAME), "w") as f:
        f.write(text_format.MessageToString(config))
