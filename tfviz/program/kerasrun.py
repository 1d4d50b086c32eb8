"""Keras ``fit`` and ``train_on_batch`` as tfviz runs them: one eager
``train_step`` per batch, on the batches Keras itself would make.

Keras builds an unbuilt model inside a throwaway trace of its own. A tensor
that ``build()`` derives from a weight then belongs to that dead graph and
fails later with an "out of scope" error, hiding the bug the user has. tfviz
builds the model with an eager call on the first batch instead, as a user's
first ``model(x)`` would.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tfviz.errors import AnalysisError

_MAX_BATCHES = 10_000


def fit_batches(model: Any, p: dict[str, Any], script: str) -> Iterator[tuple[int, int, Any]]:
    """``(epoch, batch, data)`` for every batch of every epoch ``fit(**p)`` runs, from 1.

    A program's later steps (a student trained after its teacher's epochs)
    are reached only when every epoch counts.
    """
    try:
        from keras.src.trainers.data_adapters import array_slicing
        from keras.src.trainers.epoch_iterator import EpochIterator

        x, y, sample_weight = p.get("x"), p.get("y"), p.get("sample_weight")
        if p.get("validation_split") and p.get("validation_data") is None:
            # as fit splits them, before its batches are made
            (x, y, sample_weight), _ = array_slicing.train_validation_split(
                (x, y, sample_weight), validation_split=p["validation_split"]
            )
        # Shuffled as fit shuffles (by default), at the same point of the program: the batches,
        # and so the step's gradients, are the ones the program's own fit trains on. Made by
        # Keras' own epoch iterator, as fit makes them: a warning of Keras' about the data
        # (shuffle=True on a tf.data.Dataset) is printed from where fit prints it.
        iterator = EpochIterator(
            x=x,
            y=y,
            sample_weight=sample_weight,
            batch_size=p.get("batch_size"),
            steps_per_epoch=p.get("steps_per_epoch"),
            shuffle=p.get("shuffle", True),
            class_weight=p.get("class_weight"),
        )
        dataset = iterator.data_adapter.get_tf_dataset()
    except Exception as exc:  # noqa: BLE001 - Keras' own message is the clearest
        raise AnalysisError(
            f"Model.fit cannot read its input: {type(exc).__name__}: {exc}", file=script
        ) from None
    limit = p.get("steps_per_epoch") or _MAX_BATCHES
    first = int(p.get("initial_epoch") or 0)
    for epoch in range(first, max(int(p.get("epochs") or 1), first + 1)):
        for i, data in enumerate(dataset):
            if i >= limit:
                break
            yield epoch + 1, i + 1, data


def batch_of(p: dict[str, Any]) -> Any:
    """``train_on_batch``'s arguments as the batch ``train_step`` takes."""
    import tensorflow as tf

    def tensor(v: Any) -> Any:
        return None if v is None else tf.nest.map_structure(tf.convert_to_tensor, v)

    return (tensor(p.get("x")), tensor(p.get("y")), tensor(p.get("sample_weight")))


def built(model: Any) -> bool:
    """Every layer of ``model`` is built: a trace of its step creates no variable."""
    flatten = getattr(model, "_flatten_layers", None)
    layers = list(flatten()) if flatten is not None else [model]
    return all(layer.built for layer in layers)


def prepare(model: Any, data: Any, script: str) -> None:
    """Refuse an uncompiled model as Keras would, and build it eagerly."""
    import keras

    check = getattr(model, "_assert_compile_called", None)
    if check is not None:
        check("fit")
    if built(model):
        return  # Keras' own test: a container of built models is not rebuilt
    x, _, _ = keras.utils.unpack_x_y_sample_weight(data)
    try:
        model(x)
    except Exception:  # noqa: BLE001 - a call() that does not take the data (a GAN container)
        pass  # Keras never calls it either: its train_step builds what it uses, here eagerly
