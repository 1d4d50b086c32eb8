"""tfviz: see why a TensorFlow model's gradients don't flow.

>>> import tfviz
>>> report = tfviz.check("train.py")          # doctest: +SKIP
>>> report.ok, [(p.kind, p.source.line) for p in report.problems]  # doctest: +SKIP

:func:`check` and :class:`Report` come from :mod:`tfviz.api`, :func:`assert_gradients_flow`
from :mod:`tfviz.testing`. The package imports no TensorFlow at import time, so the CLI's
help and the GUI start instantly; modules that need TensorFlow import it themselves, and
these names load their modules when first used (``__init__.pyi`` gives their types). Where
TensorFlow is imported before tfviz (a notebook, a test), the in-process analysis is
imported with the package (:func:`tfviz.api.load_analysis`), not by the first check. The
package is the public API and stands above every layer: tfviz's own modules import the
version from :mod:`tfviz.version`, never from here.
"""

from __future__ import annotations

import sys
from typing import Any

from tfviz.version import __version__

__all__ = ["AnalysisError", "Report", "__version__", "check"]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext tfviz``: the ``%tfviz`` magic (:mod:`tfviz.jupyter`)."""
    import tfviz.jupyter

    tfviz.jupyter.load_ipython_extension(ipython)


def __getattr__(name: str) -> Any:
    if name in ("check", "Report"):
        import tfviz.api

        return getattr(tfviz.api, name)
    if name == "AnalysisError":
        from tfviz.errors import AnalysisError

        return AnalysisError
    raise AttributeError(f"module 'tfviz' has no attribute {name!r}")


if "tensorflow" in sys.modules:  # a notebook or a test, which checks its own functions here
    from tfviz.api import load_analysis

    try:
        load_analysis()
    except ImportError:  # a time saver only: the first check imports it again, and says what fails
        pass
