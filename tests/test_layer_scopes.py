"""A layer's attributes as the graph document carries them (tfviz.engine.layerscopes)."""

from __future__ import annotations

import pytest

keras = pytest.importorskip("keras")

from tfviz.engine.layerscopes import attributes  # noqa: E402


@pytest.mark.parametrize("kind", ["Sequential", "Functional"])
def test_a_model_of_layers_is_its_class_and_its_layers_configs_are_not_serialized(monkeypatch, kind):
    # a deep MLP's Sequential config is every layer's: 0.4 s for 500 layers, for nothing shown
    inputs = keras.Input((3,))
    dense = keras.layers.Dense(4, activation="relu")
    if kind == "Sequential":
        model = keras.Sequential([inputs, dense])
    else:
        model = keras.Model(inputs, dense(inputs))
    calls = []
    cls = type(model)
    real = cls.get_config
    monkeypatch.setattr(cls, "get_config", lambda self: calls.append(self) or real(self))
    assert attributes(model) == {"class": kind}
    assert calls == []
    assert attributes(dense) == {"class": "Dense", "units": "4", "activation": "relu", "use_bias": "True"}


def test_alike_keras_layers_read_one_config_and_each_layer_keeps_its_own_settings(monkeypatch):
    layers = [
        *(keras.layers.Dense(32, activation="tanh") for _ in range(3)),
        keras.layers.Dense(5, use_bias=False),
        keras.layers.LSTM(4),
        keras.layers.LSTM(8),  # units behind a property: the cell's
        keras.layers.MultiHeadAttention(2, 4),
        keras.layers.MultiHeadAttention(4, 4),  # kept as _num_heads
        keras.layers.Conv2D(3, 3),
        keras.layers.Conv2D(3, 5, padding="same"),
        keras.layers.Dropout(0.1),
        keras.layers.Dropout(0.2),
        keras.layers.LayerNormalization(epsilon=1e-3),
        keras.layers.LayerNormalization(epsilon=1e-5),
        keras.layers.Reshape((2, 3)),
        keras.layers.Reshape((3, 2)),
    ]
    alone = [attributes(layer) for layer in layers]
    reads = []
    real = keras.layers.Dense.get_config
    monkeypatch.setattr(keras.layers.Dense, "get_config", lambda self: reads.append(self) or real(self))
    alike: dict = {}
    assert [attributes(layer, alike) for layer in layers] == alone
    assert len(reads) == 2  # the three alike Dense layers' config once, the other Dense's once
    assert len({str(a) for a in alone}) == len(layers) - 2
