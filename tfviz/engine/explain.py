"""Plain sentences for each kind of cut, written for someone new to autodiff."""

from __future__ import annotations

from tfviz.vocabulary import Kind

SENTENCE: dict[str, str] = {
    Kind.UNIMPLEMENTED: "TensorFlow raises while building the gradient of {op}: {message}",
    Kind.NO_GRADIENT: "{op} has no registered gradient, so tape.gradient raises when it reaches it",
    Kind.NOT_DIFFERENTIABLE: "{op} is not differentiable with respect to this input,"
    " so no gradient flows back through it",
    Kind.INTEGER: "the value passes through an integer or boolean tensor at {op};"
    " gradients only flow through floating-point values",
    Kind.STOP_GRADIENT: "tf.stop_gradient at {op} blocks the gradient",
    Kind.NOT_READ: "the target never reads this variable",
    Kind.FROZEN_COPY: "the target uses {copy}, a tensor computed from this variable before the target"
    " ran; the variable itself is never read, so it gets no gradient",
    Kind.OUTSIDE_TAPE: "the value is computed at {op} while the step's tape is not recording (before"
    " its `with tf.GradientTape()` opens, or after it closes), so the tape gives it no gradient",
    Kind.ASSIGN: "the value reaches the target only through a variable assignment at {op};"
    " assign() does not carry gradients",
    Kind.PY_FUNCTION: "{op} runs Python code (tf.numpy_function) that TensorFlow cannot differentiate",
    Kind.NAN: "the gradient is NaN or infinite at the current values; it first becomes non-finite at {op}",
    Kind.ZERO: "the gradient is exactly zero at the current values, so this variable will not"
    " change on this step: {message}",
    Kind.NOT_TRAINED: "the loss reads it, but this training step never updates it: {message}",
    Kind.OTHER: "{message}",
}

#: Added to a cut's explanation when TensorFlow returned zeros rather than None.
ZEROS_FOR_CUT = (
    "; TensorFlow returns a tensor of zeros for it rather than None, as it does for"
    " inputs of tf.while_loop and tf.cond whose path is cut, so the zeros mean this cut"
)

HINT: dict[str, str] = {
    Kind.UNIMPLEMENTED: "Give the op static shapes (use x.shape where known, or tf.ensure_shape),"
    " or run this part eagerly.",
    Kind.NO_GRADIENT: "Replace the op with a differentiable one, or wrap it in"
    " tf.custom_gradient with a gradient you define.",
    Kind.NOT_DIFFERENTIABLE: "Use a differentiable alternative (a soft version of the op) or a"
    " straight-through estimator: x + tf.stop_gradient(f(x) - x).",
    Kind.INTEGER: "Keep the value in float: avoid tf.cast to int, argmax or rounding on the"
    " gradient path, or use a straight-through estimator.",
    Kind.STOP_GRADIENT: "Remove tf.stop_gradient if this variable should learn.",
    Kind.NOT_READ: "Use the variable in the target, or mark it trainable=False if that is intended.",
    Kind.FROZEN_COPY: "Compute the derived tensor inside call()/the target instead of build() or"
    " import time, so each step reads the variable.",
    Kind.OUTSIDE_TAPE: "Compute it inside the `with tf.GradientTape()` block (call the model under the"
    " tape), or stop it on purpose with tf.stop_gradient so the intent is plain.",
    Kind.ASSIGN: "Use the computed value directly instead of assigning it to a variable and reading it back.",
    Kind.PY_FUNCTION: "Use tf.py_function with TensorFlow ops, or write the computation in TensorFlow ops.",
    Kind.NAN: "Guard the op's domain (tf.math.divide_no_nan, tf.sqrt(x + eps), clip before log).",
    Kind.ZERO: "Check the values it meets: re-initialise or use LeakyReLU for a dead ReLU, do not"
    " multiply by a zero tensor, or make sure the branch that uses it runs for your data.",
    Kind.NOT_TRAINED: "Create the weight with self.add_weight(...), and pass every variable the loss"
    " should train to tape.gradient and to the optimizer (model.trainable_variables).",
    Kind.OTHER: "Compare with tape.gradient on a small input; please report this case.",
}


def sentence(kind: str, **kw: str) -> str:
    kw.setdefault("op", "an op")
    kw.setdefault("message", "")
    kw.setdefault("copy", "a copy")
    kw["message"] = kw["message"].rstrip(". ")
    return SENTENCE.get(kind, "{message}").format(**kw)
