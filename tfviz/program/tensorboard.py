"""``--record DIR/``: a watched run written for TensorBoard, with ``tf.summary``.

Per layer (a Keras path's first part: ``dense_1`` of ``dense_1/kernel``) and per step, as
scalars: ``gradient_norm/LAYER``, ``update_norm/LAYER`` and ``update_ratio/LAYER`` (the
update's norm over the weights', the figure that says whether a layer learns at the rate its
neighbours do); and per variable ``gradients/NAME``, a histogram of the gradient's values.
``tensorboard --logdir DIR`` shows them. TensorBoard is an extra (``tfviz[tensorboard]``):
TensorFlow 2.21 ships without it, and its ``tf.summary.scalar`` needs it.
"""

from __future__ import annotations

import importlib.util
import math
from typing import Any

#: buckets of each gradient histogram
BINS = 30
INSTALL = "pip install 'tfviz[tensorboard]' (or pip install tensorboard)"


def missing() -> str:
    """Why a folder record cannot be written here ("" when it can)."""
    if importlib.util.find_spec("tensorboard") is None:
        return f"a folder record is written for TensorBoard, which is not installed: {INSTALL}"
    return ""


def wants_tensorboard(record: str) -> bool:
    """A record named as a folder (``runs/``, or one that exists) is TensorBoard's.

    >>> wants_tensorboard("runs/"), wants_tensorboard("norms.csv")
    (True, False)
    """
    import os

    return record.endswith(("/", os.sep)) or os.path.isdir(record)


class EventRecord:
    """The event files of one watched run, in ``folder`` (made if it is not there)."""

    def __init__(self, folder: str) -> None:
        import tensorflow as tf

        self.folder = folder
        self._writer = tf.summary.create_file_writer(folder)

    def write(self, rows: list[list[Any]], histograms: dict[str, list[float]]) -> None:
        """One step's rows (step, name, gradient norm, update norm, weight norm) and each
        variable's histogram (:func:`histogram_of`'s figures: low, high, then the counts)."""
        import tensorflow as tf

        from tfviz.program.layerpoints import layer_point

        if not rows:
            return
        point = layer_point(rows)
        step = int(point["step"])
        with self._writer.as_default(step=step):
            for layer, g in point["grad"].items():
                tf.summary.scalar(f"gradient_norm/{layer}", g)
            for layer, u in point["update"].items():
                tf.summary.scalar(f"update_norm/{layer}", u)
                w = point["weight"].get(layer)
                if w:
                    tf.summary.scalar(f"update_ratio/{layer}", u / w)
            for name, figures in histograms.items():
                buckets = _buckets(figures)
                if buckets is not None:
                    tf.summary.write(f"gradients/{name}", buckets, metadata=_HISTOGRAM.get())
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


def histogram_of(values: Any) -> Any:
    """In-graph: the low and high of a gradient's finite values, then the count in each of
    :data:`BINS` equal buckets between them (``BINS + 2`` floats)."""
    import tensorflow as tf

    flat = tf.reshape(tf.cast(values, tf.float32), [-1])
    flat = tf.boolean_mask(flat, tf.math.is_finite(flat))
    low = tf.reduce_min(flat, keepdims=True)
    high = tf.reduce_max(flat, keepdims=True)
    empty = tf.equal(tf.size(flat), 0)
    low = tf.where(empty, tf.zeros([1]), low)
    high = tf.where(empty, tf.zeros([1]), high)
    # one value throughout (a bias's gradient of one element): a bucket of some width around it
    top = tf.where(high > low, high, low + tf.maximum(tf.abs(low) * 1e-3, 1e-3))
    span = tf.concat([low, top], 0)
    counts = tf.cast(tf.histogram_fixed_width(flat, span, nbins=BINS), tf.float32)
    return tf.concat([low, high, counts], 0)


def _buckets(figures: list[float]) -> Any:
    """TensorBoard's histogram tensor, ``[[left, right, count], ...]``, from our figures."""
    import tensorflow as tf

    if len(figures) != BINS + 2 or not all(math.isfinite(x) for x in figures[:2]):
        return None
    low, high, counts = figures[0], figures[1], figures[2:]
    width = (high - low) / BINS if high > low else 0.0
    edges = [[low + i * width, low + (i + 1) * width if width else high, c] for i, c in enumerate(counts)]
    return tf.constant(edges, tf.float64)


class _Metadata:
    """The histogram plugin's summary metadata, made once (TensorBoard's own module)."""

    def __init__(self) -> None:
        self._made: Any = None

    def get(self) -> Any:
        if self._made is None:
            from tensorboard.plugins.histogram import metadata  # type: ignore[import-untyped]

            made = metadata.create_summary_metadata(display_name="", description="")
            self._made = made.SerializeToString()
        return self._made


_HISTOGRAM = _Metadata()
