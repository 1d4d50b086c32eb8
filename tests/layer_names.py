"""Keras' own names for a model's layers, in a fresh process (Keras numbers a repeated
name per process: ``fc_layer_1`` in a process that made one before).

Usage: python tests/layer_names.py SCRIPT EXPRESSION  (prints a JSON list)

The script is loaded as tfviz loads a ``loss()`` script, its ``loss`` called once (a lazy
model builds then), and EXPRESSION (``encoder``, ``model``) names the model.
"""

from __future__ import annotations

import json
import os
import runpy
import sys


def main(script: str, expression: str) -> None:
    os.chdir(os.path.dirname(os.path.abspath(script)))
    ns = runpy.run_path(script, run_name="tfviz_oracle")
    ns["loss"]()
    model = eval(expression, ns)  # noqa: S307 - our own examples' names
    print(json.dumps([layer.name for layer in model.layers]))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
