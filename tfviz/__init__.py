"""tfviz: see why a TensorFlow model's gradients don't flow.

The package imports no TensorFlow at import time, so the CLI's help and the
GUI start instantly; modules that need TensorFlow import it themselves.
"""

__version__ = "0.1.0"
