"""Keep TensorFlow's own log chatter out of our output, and give it back to the user's
program.

:func:`silence_tensorflow` must run before ``import tensorflow``: the C++ logger reads the
environment once, at load time. The Python side (warnings from TensorFlow's and Keras'
modules, their loggers' levels) is silenced for tfviz's own work only: while the user's
program runs, :func:`as_python_has_it` puts back what ``python`` would show it (Keras'
``shuffle=True`` warning, TensorFlow's retracing warning).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import warnings
from collections.abc import Iterator
from typing import Any

#: What the worker sets where the environment does not say otherwise, before TensorFlow loads.
QUIET_ENVIRONMENT = {"TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "tensorflow", "ABSL_MIN_LOG_LEVEL": "3"}


def silence_tensorflow() -> None:
    """TensorFlow's log levels, never its kernels: oneDNN stays as ``python`` has it (off, a
    conv net trains 3 to 4 times slower on a CPU), so a watched program runs and rounds as the
    user's own run does."""
    for key, value in QUIET_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    # first in the list, as filterwarnings puts them (ahead of an "always" set since)
    rest = [f for f in warnings.filters if f not in _QUIET_FILTERS]
    warnings.filters[:] = [*_QUIET_FILTERS, *rest]  # type: ignore[index]  # a list at run time
    for name in _LOGGERS:
        _AS_PYTHON.setdefault(name, logging.getLogger(name).level)
        logging.getLogger(name).setLevel(logging.ERROR)


def import_tensorflow() -> Any:
    """Import TensorFlow silently and return the module."""
    silence_tensorflow()
    # The C++ runtime prints a few lines to fd 2 before any setting applies.
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        import tensorflow as tf
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)

    from absl import logging as absl_logging
    from tensorflow.python.autograph.utils import ag_logging

    _AS_PYTHON.setdefault("absl verbosity", absl_logging.get_verbosity())
    _AS_PYTHON.setdefault("autograph verbosity", ag_logging.verbosity_level)
    tf.get_logger().setLevel(logging.ERROR)
    absl_logging.set_verbosity(absl_logging.ERROR)
    tf.autograph.set_verbosity(0)
    return tf


_QUIET_MODULES = ("tensorflow", "keras")
#: tfviz's silence of their warnings, as ``warnings.filterwarnings("ignore", module=m)`` makes
#: it, but put in and taken out of the filter list without ``filterwarnings``' call to
#: ``warnings._filters_mutated()``: that call makes every module's ``__warningregistry__`` stale,
#: so a warning ``python`` shows once at a line would be shown again after each check, in the
#: caller's own code too. The registries need no refresh for these filters: an ignored warning
#: is never written to a registry, so nothing they hold was decided by them.
_QUIET_FILTERS = tuple(("ignore", None, Warning, re.compile(m), 0) for m in _QUIET_MODULES)
_LOGGERS = ("tensorflow", "absl", "h5py")
#: What ``python`` has where tfviz silences: each logger's level, absl's and autograph's
#: verbosity, as they were before tfviz changed them.
_AS_PYTHON: dict[str, Any] = {}


def as_python_has_it_now() -> None:
    """Forget what the process had before tfviz silenced it: the next silence reads it again.
    A caller's own process checked a second time may have changed its levels since the first
    (a notebook that turned TensorFlow's logger down)."""
    _AS_PYTHON.clear()


@contextlib.contextmanager
def as_python_has_it() -> Iterator[None]:
    """While entered, the warnings and log levels ``python`` would give the user's program
    (what it changes of them itself is its own); tfviz's silence again afterwards."""
    if "absl verbosity" not in _AS_PYTHON:  # TensorFlow not imported through here: nothing silenced
        yield
        return
    from absl import logging as absl_logging
    from tensorflow.python.autograph.utils import ag_logging

    quiet_filters = list(warnings.filters)
    quiet_levels = {name: logging.getLogger(name).level for name in _LOGGERS}
    quiet_absl, quiet_autograph = absl_logging.get_verbosity(), ag_logging.verbosity_level
    # in place, the registries left valid (:data:`_QUIET_FILTERS`)
    warnings.filters[:] = [f for f in warnings.filters if f not in _QUIET_FILTERS]  # type: ignore[index]
    for name in _LOGGERS:
        logging.getLogger(name).setLevel(_AS_PYTHON[name])
    absl_logging.set_verbosity(_AS_PYTHON["absl verbosity"])
    ag_logging.verbosity_level = _AS_PYTHON["autograph verbosity"]
    try:
        yield
    finally:
        warnings.filters[:] = quiet_filters  # type: ignore[index]
        for name, level in quiet_levels.items():
            logging.getLogger(name).setLevel(level)
        absl_logging.set_verbosity(quiet_absl)
        ag_logging.verbosity_level = quiet_autograph
