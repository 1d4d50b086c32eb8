"""What the program's patched calls leave for the analysis, shared by the patches
(:mod:`tfviz.program.hooks`) and the readouts (:mod:`tfviz.program.readouts`): a Keras
``predict()`` called under a tape, and the file of autograph's wrapper frames that a caller's
frame is looked for past."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from tfviz.report import Source

#: the file of the do_not_convert wrapper around every patch
AUTOGRAPH_API = os.path.join("autograph", "impl", "api.py")


@dataclass
class Predicted:
    """A Keras model's ``predict()`` called while a tape recorded: by the name the caller
    holds the model under, at the caller's line."""

    model: Any
    name: str
    source: Source
