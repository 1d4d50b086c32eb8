"""The fixed words a verdict is made of: why a gradient is cut, how a variable fares, how
an edge is drawn, how grave a problem is.

Each is a ``(str, Enum)``: a member *is* its string, so it compares equal to the word read
back from JSON, an analysis file or a worker message, and serialises as that word. The
engine writes members, so a misspelt word is an ``AttributeError`` where it is made rather
than a colour silently missing from the legend; readers on the other side of a process
boundary see plain strings and need nothing from here.

>>> Kind.NAN == "nan", f"{Kind.NAN}", str(Status.BROKEN), Kind.ZERO, type(Kind.ZERO).__name__
(True, 'nan', 'broken', 'zero', 'Kind')
>>> import json; json.dumps({"kind": Kind.ZERO})
'{"kind": "zero"}'
"""

from __future__ import annotations

from enum import Enum


class Word(str, Enum):
    """A member that prints, formats, hashes and even reprs as its value (``enum.StrEnum``,
    which Python 3.10 lacks, keeps the ``<Kind.NAN: 'nan'>`` repr): a word quoted in a
    message or a tuple reads as it did when it was a plain string."""

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return repr(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Kind(Word):
    """Why a gradient does not arrive, or arrives suspect (the last five are warnings)."""

    UNIMPLEMENTED = "unimplemented"
    NO_GRADIENT = "no_gradient"
    NOT_DIFFERENTIABLE = "not_differentiable"
    INTEGER = "integer"
    STOP_GRADIENT = "stop_gradient"
    NOT_READ = "not_read"
    FROZEN_COPY = "frozen_copy"
    OUTSIDE_TAPE = "outside_tape"
    ASSIGN = "assign"
    PY_FUNCTION = "py_function"
    NAN = "nan"
    NOT_TRAINED = "not_trained"
    ZERO = "zero"
    VANISHING = "vanishing"
    EXPLODING = "exploding"
    CANCELLED = "cancelled"
    OTHER = "other"


#: Kinds whose gradient function raises, failing the whole ``tape.gradient`` call.
RAISING: frozenset[Kind] = frozenset({Kind.UNIMPLEMENTED, Kind.NO_GRADIENT})
#: Kinds that say how a gradient arrives rather than that it is cut.
MAGNITUDE: frozenset[Kind] = frozenset({Kind.ZERO, Kind.VANISHING, Kind.EXPLODING})


class Status(Word):
    """What ``tape.gradient`` returns for a variable: a tensor, None, or an exception."""

    CONNECTED = "connected"
    DISCONNECTED = "disconnected"
    BROKEN = "broken"


class Flow(Word):
    """An edge's or op's status when it is not a :class:`Kind` (a cut)."""

    #: the gradient passes
    PASSES = "passes"
    #: on no variable-to-target path at all
    OFF_PATH = "off_path"
    #: on a path, but a cut further toward the target keeps every gradient from it
    STARVED = "starved"


class Severity(Word):
    """How a problem weighs on the verdict: only errors make a report fail."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Category(Word):
    """A legend entry: the look an edge is drawn with. Several kinds share ``CUT``, both
    raising kinds are ``RAISES``, and a cut no variable needs is ``MUTED``."""

    PASSES = "passes"
    RAISES = "raises"
    CUT = "cut"
    STOP_GRADIENT = "stop_gradient"
    INTEGER = "integer"
    NAN = "nan"
    ZERO = "zero"
    VANISHING = "vanishing"
    EXPLODING = "exploding"
    NOT_TRAINED = "not_trained"
    STARVED = "starved"
    MUTED = "muted"
    OFF_PATH = "off_path"


#: What each kind means, and what usually mends it: a SARIF rule's description and help, and
#: the reference's table of kinds. (short description, how to fix it)
KIND_HELP: dict[Kind, tuple[str, str]] = {
    Kind.UNIMPLEMENTED: (
        "The op's gradient raises, failing the whole tape.gradient call.",
        "Give the op what its gradient needs (an SVD's static inner shape), compute that part"
        " outside the differentiated path, or wrap it in tf.custom_gradient.",
    ),
    Kind.NO_GRADIENT: (
        "No gradient is registered for the op (ResizeArea, for one).",
        "Use a differentiable op in its place (tf.image.resize with a differentiable method),"
        " or register a gradient for it.",
    ),
    Kind.NOT_DIFFERENTIABLE: (
        "The op is registered as not differentiable, or returns no gradient for that input"
        " (tf.round, argmax, a custom gradient returning None).",
        "Replace the step with a smooth surrogate (a straight-through estimator, softmax"
        " instead of argmax), or make the custom gradient return one for that input.",
    ),
    Kind.INTEGER: (
        "The value passes through an integer or boolean tensor, which carries no gradient.",
        "Keep the path in floating point: drop the Cast to an integer type, or compute the"
        " integer part outside the differentiated path.",
    ),
    Kind.STOP_GRADIENT: (
        "tf.stop_gradient stands on the only path from the variable to the loss.",
        "Remove the tf.stop_gradient, or differentiate a path that does not pass through it.",
    ),
    Kind.NOT_READ: (
        "The loss never reads the variable, or reads it out into Python (.numpy(),"
        " model.predict()) where no gradient follows.",
        "Compute the loss from the variable with TensorFlow ops inside the tape, and call the"
        " model (model(x)) rather than model.predict(x).",
    ),
    Kind.FROZEN_COPY: (
        "The loss uses a tensor computed from the variable before the step ran (in build(),"
        " at import): a frozen copy, not the variable.",
        "Compute the value from the variable inside call() (or the step), so that each step"
        " reads the variable itself.",
    ),
    Kind.OUTSIDE_TAPE: (
        "The value is computed while the step's tape does not record, or the tape does not"
        " watch the variable.",
        "Move the computation inside the `with tf.GradientTape()` block, watch the tensor"
        " (tape.watch), or make the variable trainable.",
    ),
    Kind.ASSIGN: (
        "The value reaches the loss only through a variable assignment, which has no gradient.",
        "Use the computed tensor itself in the loss, not a variable it was assigned to.",
    ),
    Kind.PY_FUNCTION: (
        "The value passes through tf.numpy_function or tf.py_func, which have no gradient.",
        "Write that part with TensorFlow ops, or use tf.py_function with a gradient (tf.custom_gradient).",
    ),
    Kind.NAN: (
        "The gradient is NaN or infinite at the current values.",
        "Look at the op named where it first becomes non-finite: guard its input (a log or"
        " sqrt of zero, a division by zero), or clip the values that reach it.",
    ),
    Kind.NOT_TRAINED: (
        "The step computes the variable's gradient, but its update never applies it.",
        "Pass the gradient and the variable to the optimizer's apply_gradients (it was"
        " dropped, or filtered out, before the update).",
    ),
    Kind.ZERO: (
        "Connected, but the gradient is exactly zero at the current values (a dead ReLU, a"
        " multiplication by zeros, a branch not taken).",
        "Check the op named as the one that zeroes it: its inputs at these values, the"
        " initialisation, or the branch condition.",
    ),
    Kind.VANISHING: (
        "The gradient arrives, but too small against its peers to train the variable.",
        "Look at the layers it passes through: saturating activations, depth without"
        " residual connections or normalisation, a tiny loss scale.",
    ),
    Kind.EXPLODING: (
        "The gradient arrives far larger than its peers, so an update overshoots.",
        "Lower the learning rate, clip gradients (clipnorm), or normalise the layers it passes through.",
    ),
    Kind.CANCELLED: (
        "The gradient is rounding noise of one that is zero in exact arithmetic: a"
        " normalization after the layer cancels its bias, a softmax an attention key's bias.",
        "Usually nothing: stock Keras models are built so. Drop the bias (use_bias=False)"
        " before a normalization to save the variable.",
    ),
    Kind.OTHER: (
        "Anything else, including a disagreement between tfviz's reasoning and TensorFlow.",
        "Read the message; TensorFlow's own answer is the one given for the variable.",
    ),
}


#: how Python read a tensor's value out, by the method it called, in the user's words: what
#: is computed from a value read out is a new constant to the tape
READ_OUT_AS = {
    "__bool__": "a Python condition",
    "__float__": "float()",
    "__int__": "int()",
    "__index__": "an index",
    "numpy": ".numpy()",
    "__array__": "NumPy",
}
