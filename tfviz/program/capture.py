"""What program mode keeps of a step: the captured step itself, the exceptions that
unwind the user's program at it, and the bookkeeping of step calls and open tapes."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tfviz.errors import AnalysisError
from tfviz.program.sources import base_variable
from tfviz.report import Source
from tfviz.script.discover import FoundVariable
from tfviz.script.sourcemap import code_at


def loss_scale(scaler: Any) -> float | None:
    """The scale ``scaler`` (a Keras ``LossScaleOptimizer``) multiplies the loss by now; None
    where it cannot be read."""
    try:
        return float(scaler.dynamic_scale.numpy()) if scaler.built else float(scaler.initial_scale)
    except Exception:  # noqa: BLE001 - an optimizer of another shape: nothing to say
        return None


@dataclass
class Listing:
    """A layer's ``trainable_variables`` as the program's own code read it.

    A variable list is a snapshot: a layer made trainable after it was taken
    (the transfer-learning guide's unfreeze) is not in it, and the list a step
    passes to its gradient call may be that older one.
    """

    layer: Any
    #: the listed variables (tfviz.program.sources.variable_ids)
    ids: set[int]
    where: Source


@dataclass
class FrozenTraining:
    """A Keras training call (``fit``, ``train_on_batch``) on a model with no trainable
    weights: Keras warns and trains nothing. Keras 3 reads ``trainable`` at every step, so
    a model frozen for a combined model's step (the Keras 2 GAN pattern) is frozen for its
    own step too."""

    model: Any
    #: the call as the program wrote it: ``disc.train_on_batch``
    call: str
    where: Source

    @property
    def holder(self) -> str:
        """The model as the call names it: ``disc`` of ``disc.train_on_batch``."""
        return self.call.rsplit(".", 1)[0]

    def said(self) -> str:
        return (
            f"{self.call} at {os.path.basename(self.where.file)}:{self.where.line} trains nothing:"
            f" {self.holder} has no trainable weights (its {len(self.model.weights)} weights are frozen,"
            " trainable = False): Keras 3 reads the flag at every step, not when the model is"
            " compiled"
        )

    def hint(self) -> str:
        return (
            f"Set {self.holder}.trainable = True before its own training call and back to False"
            f" before the combined model's, or train {self.holder} in a step with a tape over its"
            " trainable_variables."
        )


@dataclass
class StepCapture:
    """The captured step: how to replay it and what it differentiates."""

    api: str
    description: str
    replay: Callable[[], Any]
    sources: list[FoundVariable]
    where: Source | None = None
    error: BaseException | None = None
    #: the names visible where the step was called, for naming what it uses
    namespace: dict[str, Any] = field(default_factory=dict)
    #: the sources exactly as the program passed them, flattened
    passed: list[Any] = field(default_factory=list)
    #: the gradients handed back to the program (TensorFlow's own), in the same order
    handed: list[Any] = field(default_factory=list)
    #: what the optimizer was asked to update: (index into ``passed`` of the
    #: gradient it got, or None when that gradient was not one of ours, variable)
    updates: list[tuple[int | None, Any]] | None = None
    updates_known: bool = True
    update_at: Source | None = None
    #: the program runs the step as a graph, so the traced verdict is its truth
    as_graph: bool = False
    #: ids of the variables the step's tape watched (None: no tape, tf.gradients)
    watched: set[int] | None = None
    #: those variables themselves, as the program's own tape read them
    watched_variables: list[Any] = field(default_factory=list)
    #: the step ran under a tf.distribute strategy (its replay is checked eagerly as well)
    distributed: bool = False
    #: a graph step: ids of the handles its trace had read by its gradient call (tape or not)
    read_in_graph: set[int] = field(default_factory=set)
    #: where that tape was opened
    tape_at: Source | None = None
    #: the layers' trainable variables as the program's code listed them (see :class:`Listing`)
    listings: list[Listing] = field(default_factory=list)
    #: training calls before the step on models with nothing to train (:class:`FrozenTraining`)
    frozen_training: list[FrozenTraining] = field(default_factory=list)
    #: which of the program's gradient computations this is, counted from 1
    count: int = 0
    #: the step's tape (its id) and whether it is persistent
    tape_id: int | None = None
    tape_persistent: bool = True
    #: the tape watches what it reads (not opened with watch_accessed_variables=False)
    tape_watches_accessed: bool = True
    #: a later gradient call on that tape, when it is not persistent: where it asks, and the
    #: ids of what it asks for (TensorFlow raises there: one set of gradients per tape)
    reused_at: Source | None = None
    reused_for: set[int] = field(default_factory=set)
    #: where a tape that encloses the step's own was opened: it is still recording, so it
    #: differentiates through this gradient (second order), and trains in a later step
    enclosing_at: Source | None = None
    #: the LossScaleOptimizer whose scale_loss made the loss this step differentiates
    loss_scaler: Any = None
    #: the model whose Keras training call (fit, train_on_batch) runs this step
    keras_model: Any = None

    def gradient_again(self, hit: Any, where: Source | None) -> None:
        """The program asks ``hit`` after the step's own gradient call: on the step's tape,
        when it is not persistent, TensorFlow raises there."""
        import tensorflow as tf

        if (
            self.reused_at is None
            and hit.tape is not None
            and id(hit.tape) == self.tape_id
            and not self.tape_persistent
        ):
            self.reused_at = where
            self.reused_for = {id(base_variable(s)) for s in tf.nest.flatten(hit.sources)}

    def hand(self, hit: Any, grads: Any) -> Any:
        """Hand the program TensorFlow's own gradients for the step and remember them: what
        its optimizer is then asked to apply is matched to them by identity. The program
        never sees a value TensorFlow would not give it."""
        import tensorflow as tf

        self.passed = tf.nest.flatten(hit.sources)
        self.handed = list(tf.nest.flatten(grads, expand_composites=False)) if grads is not None else []
        return grads

    def handed_norms(self) -> dict[int, float]:
        """The norm of each gradient the program's own gradient call returned, by the id of the
        variable (or tensor) it is for, as its optimizer applies it (an IndexedSlices summed
        into a dense tensor); empty for a step the program runs as a graph, whose gradients
        were symbolic, and under a strategy (one replica's)."""
        import tensorflow as tf

        if self.as_graph or self.distributed or self.api not in ("tape.gradient", "tf.gradients"):
            return {}  # (a Jacobian's rows are not the gradient whose size the report gives)
        out: dict[int, float] = {}
        for source, grad in zip(self.passed, self.handed):
            if grad is None or not hasattr(grad, "numpy") and not isinstance(grad, tf.IndexedSlices):
                continue
            try:
                dense = tf.convert_to_tensor(grad)
                if not hasattr(dense, "numpy") or not dense.dtype.is_floating:
                    continue
                out[id(base_variable(source))] = float(tf.norm(tf.cast(dense, tf.float64)))
            except Exception:  # noqa: BLE001 - a value that cannot be measured keeps the replay's
                continue
        return out

    def record_update(self, grads: list[Any], variables: list[Any], where: Source | None) -> None:
        index = {id(g): i for i, g in enumerate(self.handed) if g is not None}
        self.updates = [(index.get(id(g)), v) for g, v in zip(grads, variables)]
        self.update_at = where


class Reached(BaseException):
    """The N-th gradient computation: ends the user's program (see tfviz.program.launch)."""

    def __init__(self, capture: StepCapture) -> None:
        super().__init__("tfviz captured the gradient step")
        self.capture = capture
        #: Keras' per-thread settings where the program stopped (see tfviz.program.keras_state)
        self.keras_settings: dict[str, Any] = {}


class Refused(BaseException):
    def __init__(self, error: AnalysisError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass
class Entry:
    """An outermost step call: a tf.function called eagerly, or a Keras batch."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    frame_ns: dict[str, Any]
    label: str = ""
    autograph: bool = True
    graph: Any = None
    hits: int = 0
    called_at: Source | None = None
    #: the real program runs this step as a graph (tf.function, Keras fit)
    as_graph: bool = True
    #: nested tf.functions around its gradient calls: the replay runs them as Python
    inline: list[Any] = field(default_factory=list)
    #: the tf.function called, when the step is one
    function: Any = None
    #: this call makes the Function's first trace, the one that may create variables
    first_trace: bool = False
    #: tapes the program had entered before this step began
    tapes_before: int = 0


@dataclass
class TapeStart:
    frame: Any
    line: int
    namespace: dict[str, Any]
    count: int
    #: the user's line, where ``frame`` is AutoGraph's converted code
    where: Source | None = None
    #: how many tapes the program had entered before this one
    serial: int = 0

    def opened_at(self) -> Source:
        """The line the tape was opened at (its ``with``): the frame has moved on since."""
        if self.where is not None:
            return self.where
        filename = self.frame.f_code.co_filename
        return Source(filename, self.line, code_at(filename, self.line))
