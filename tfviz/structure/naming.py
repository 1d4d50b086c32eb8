"""Names of graph nodes and boxes as the user would write them, not as the trace made them.

The trace names things for TensorFlow's bookkeeping: a constant the ``[:, 0]`` of the
user's code needs is ``strided_slice/stack_1``, Keras' constants are bare numbers
(``221``), a while loop's variables are ``Placeholder_2``, and a loss called three
times leaves ``binary_crossentropy``, ``binary_crossentropy_1``, ``binary_crossentropy_2``.
These rules give such nodes a title that says what they hold, and only them: a name the
user chose (a layer, a ``tf.constant(..., name="scale")``, a ``tf.function``'s argument)
is kept.
"""

from __future__ import annotations

import re

from tfviz.report import GraphFunction, GraphOp, TensorInfo

#: the names TensorFlow gives a constant nobody named: ``Const_3``, Keras' ``221``, an
#: operand (``mul/x``, ``add_2/y``), a slice's bounds (``strided_slice/stack_1``)
_AUTO_CONST = re.compile(r"^(?:Const|stack|x|y|\d+)(?:_\d+)?$")
_LOOP_VAR = re.compile(r"^Placeholder(?:_(\d+))?$")
#: a name the trace may have numbered: ``einsum_2``, ``discriminator_3``
SUFFIX = re.compile(r"^(.*)_(\d+)$")
_FN_NAME = re.compile(r"^(?:__inference_|__forward_|__backward_)?(.*?)(?:_\d+)?(?:_rewritten)?$")
_BODY_OF = {"body": "body", "cond": "condition", "then": "true branch", "else": "false branch"}
#: function kinds whose inputs are the user's captured tensors or loop variables, never
#: arguments the user named (a ``tf.function``'s ``x`` is kept)
CONTROL_FLOW = ("body", "cond", "then", "else")


def tensor_text(t: TensorInfo) -> str:
    """``float32[8,4]``, ``int32 scalar``, ``float32[?,4]``; ``float32`` when the rank is unknown."""
    if t.shape is None:
        return t.dtype
    if not t.shape:
        return f"{t.dtype} scalar"
    return f"{t.dtype}[{','.join('?' if d is None else str(d) for d in t.shape)}]"


def _what(op: GraphOp) -> str:
    return tensor_text(op.outputs[0]) if op.outputs else ""


def const_title(op: GraphOp, local: str) -> str | None:
    """``const int32[2]`` for a constant the trace named (``strided_slice/stack_1``,
    ``Const_2``, ``221``); None for one the user or an API named (``scale``, ``zeros``,
    ``while/maximum_iterations``).
    ``local``: its name within the box that holds it."""
    if op.type != "Const" or not op.outputs:
        return None
    if _AUTO_CONST.match(local.rsplit("/", 1)[-1]):
        return f"const {_what(op)}"
    return None


def input_title(op: GraphOp, local: str, fed: bool, fn_kind: str, call_type: str) -> str | None:
    """A placeholder's title by what it holds, or None to keep its name.

    - not fed by anything in the graph: a tensor the function captured (``captured
      float32[8,4]``) or a variable the report does not list (``captured variable``);
    - in a while loop's body or condition: ``loop_vars[1] int32[4]``, ``loop counter``;
    - in another control-flow body (a ``tf.cond`` branch): the tensors its lambdas capture.
    A ``tf.function``'s arguments keep the names the user gave them."""
    if op.type != "Placeholder" or not op.outputs:
        return None
    resource = op.outputs[0].dtype == "resource"
    flow = fn_kind in CONTROL_FLOW or fn_kind.startswith("branch")
    last = local.rsplit("/", 1)[-1]
    if flow and "While" in call_type and not resource:  # while_v2 names them so
        if last in ("loop_counter", "maximum_iterations"):
            return last.replace("_", " ")
        m = _LOOP_VAR.match(last)
        if m:
            return f"loop_vars[{m.group(1) or 0}] {_what(op)}"
    if not fed:
        return "captured variable" if resource else f"captured {_what(op)}"
    if resource or not flow:
        return None
    return f"captured {_what(op)}"


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``11th``, ``22nd``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def trace_number(scope: str) -> int:
    """The number the trace appended to a scope's last segment (``discriminator_2`` -> 2),
    0 for none: repeated calls of one object are numbered in call order."""
    m = SUFFIX.match(scope.rsplit("/", 1)[-1])
    return int(m.group(2)) if m else 0


def call_labels(siblings: list[tuple[str, str, bool]]) -> list[str]:
    """Titles for the boxes of one parent, given each as ``(label, scope, named)``; ``named``:
    the label is a user object's name (a layer), which is kept as it is.

    A scope the trace numbered because the same function ran before in this graph
    (``binary_crossentropy_1`` beside ``binary_crossentropy``) is titled as the first;
    siblings left with one title are then told apart by call order: ``binary_crossentropy``,
    ``binary_crossentropy (2nd call)``, ... A lone ``x_1`` keeps its name: nothing shows
    the trace added the suffix.

    >>> call_labels([("bce", "bce", False), ("bce_2", "bce_2", False), ("x_1", "x_1", False)])
    ['bce', 'bce (3rd call)', 'x_1']
    >>> call_labels([("d", "m/d_1", True), ("d", "m/d_3", True)])
    ['d', 'd (2nd call)']
    """
    plain = {label for label, _, _ in siblings}
    out = []
    for label, _, named in siblings:
        m = SUFFIX.match(label)
        out.append(m.group(1) if m and not named and m.group(1) in plain else label)
    same: dict[str, list[int]] = {}
    for i, label in enumerate(out):
        same.setdefault(label, []).append(i)
    for label, idx in same.items():
        if len(idx) < 2:
            continue
        # TensorFlow numbers a name scope's calls one by one (``einsum_2`` is the third, even
        # where the second was flattened away); Keras skips numbers (``discriminator_1``,
        # ``discriminator_3``), so a layer's calls are counted among the boxes
        counted = any(siblings[i][2] for i in idx)
        order = sorted(idx, key=lambda i: (trace_number(siblings[i][1]), i))
        for rank, i in enumerate(order, 1):
            n = rank if counted else trace_number(siblings[i][1]) + 1
            if n > 1:
                out[i] = f"{label} ({ordinal(n)} call)"
    return out


def untraced(label: str) -> str:
    """Keras' trace suffix dropped from a name it adds it to (``resnet50_1``)."""
    return label[:-2] if label.endswith("_1") and len(label) > 2 else label


def layer_label(segment: str, layers: set[str]) -> str:
    """A scope segment as the user named the layer: Keras' trace adds ``_1`` (``enc_1_1``
    for the layer ``enc_1``); it is dropped only where the shorter name is a layer's.

    >>> layer_label("enc_1_1", {"enc_1"}), layer_label("enc_1", {"enc_1"}), layer_label("x_1", set())
    ('enc_1', 'enc_1', 'x_1')
    """
    if segment in layers:
        return segment
    m = SUFFIX.match(segment)
    if m and m.group(1) in layers:
        return m.group(1)
    return segment


def function_title(fn: GraphFunction, call: GraphOp | None = None) -> str:
    """A function body's title, from its record and the op that runs it (if still in the graph)."""
    src = getattr(fn, "source", None) or (call.source if call else None)
    where = f"{src.file.rsplit('/', 1)[-1]}:{src.line}" if src else ""
    return function_label(fn, getattr(fn, "call_type", "") or (call.type if call else ""), where)


def function_label(fn: GraphFunction, call_type: str = "", where: str = "") -> str:
    """``body of while_loop at rnn.py:31``, ``true branch of cond at x.py:9``, ``step (tf.function)``."""
    at = f" at {where}" if where else ""
    if fn.kind in _BODY_OF or fn.kind.startswith("branch"):
        what = (
            "while_loop"
            if "While" in call_type
            else "cond"
            if "If" in call_type
            else "switch_case"
            if "Case" in call_type
            else "control flow"
        )
        part = _BODY_OF.get(fn.kind) or fn.kind.replace("branch", "branch ")
        return f"{part} of {what}{at}"
    name = _FN_NAME.match(fn.name).group(1) or fn.name  # type: ignore[union-attr]  # every name matches
    return f"{name} (tf.function){at}"
