"""One watched step's figures per layer, as the live views and the TensorBoard record show
them: a layer's gradient, update and weight norms, each the root of the sum of its
variables' squares."""

from __future__ import annotations

import math
from typing import Any


def layer_point(rows: list[list[Any]]) -> dict[str, Any]:
    """One step's figures per layer: the gradient, update and weight norms of its variables
    taken together (root of the sum of squares), for the live view.

    >>> p = layer_point([[3, "d/kernel", 3.0, 0.3, 4.0], [3, "d/bias", 4.0, None, 0.0]])
    >>> p["step"], p["grad"], p["update"], p["weight"]
    (3, {'d': 5.0}, {'d': 0.3}, {'d': 4.0})
    """
    grad: dict[str, float] = {}
    update: dict[str, float] = {}
    weight: dict[str, float] = {}
    for _, name, g, u, w in rows:
        layer = layer_of(name)
        for into, x in ((grad, g), (update, u), (weight, w)):
            if x is not None:
                into[layer] = into.get(layer, 0.0) + x * x
    step = rows[0][0] if rows else 0
    return {
        "step": step,
        **{
            k: {n: math.sqrt(x) for n, x in d.items()}
            for k, d in (("grad", grad), ("update", update), ("weight", weight))
        },
    }


def layer_of(name: str) -> str:
    """``model/dense_1/kernel`` -> ``model/dense_1``; a bare name is its own layer."""
    return name.rsplit("/", 1)[0] if "/" in name else name
