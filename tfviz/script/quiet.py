"""Keep TensorFlow's own log chatter out of our output.

Must run before ``import tensorflow``: the C++ logger reads the environment
once, at load time.
"""

from __future__ import annotations

import logging
import os
import warnings
from typing import Any

#: What the worker sets where the environment does not say otherwise, before TensorFlow loads.
QUIET_ENVIRONMENT = {"TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "tensorflow", "ABSL_MIN_LOG_LEVEL": "3"}


def silence_tensorflow() -> None:
    """TensorFlow's log levels, never its kernels: oneDNN stays as ``python`` has it (off, a
    conv net trains 3 to 4 times slower on a CPU), so a watched program runs and rounds as the
    user's own run does."""
    for key, value in QUIET_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    warnings.filterwarnings("ignore", module="tensorflow")
    warnings.filterwarnings("ignore", module="keras")
    for name in ("tensorflow", "absl", "h5py"):
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

    tf.get_logger().setLevel(logging.ERROR)
    try:
        from absl import logging as absl_logging

        absl_logging.set_verbosity(absl_logging.ERROR)
    except ImportError:  # pragma: no cover - absl ships with TensorFlow
        pass
    tf.autograph.set_verbosity(0)
    return tf
