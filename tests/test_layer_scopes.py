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
