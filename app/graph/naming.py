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

#: the names TensorFlow gives a constant nobody named: ``Const_3``, Keras' ``221``, an
#: operand (``mul/x``, ``add_2/y``), a slice's bounds (``strided_slice/stack_1``)
_AUTO_CONST = re.compile(r"^(?:Const|stack|x|y|\d+)(?:_\d+)?$")
_LOOP_VAR = re.compile(r"^Placeholder(?:_(\d+))?$")
_SUFFIX = re.compile(r"^(.*)_(\d+)$")
#: function kinds whose inputs are the user's captured tensors or loop variables, never
#: arguments the user named (a ``tf.function``'s ``x`` is kept)
CONTROL_FLOW = ("body", "cond", "then", "else")


def tensor_text(t) -> str:
    """``float32[8,4]``, ``int32 scalar``, ``float32[?,4]``; ``float32`` when the rank is unknown."""
    if t.shape is None:
        return t.dtype
    if not t.shape:
        return f"{t.dtype} scalar"
    return f"{t.dtype}[{','.join('?' if d is None else str(d) for d in t.shape)}]"


def _what(op) -> str:
    return tensor_text(op.outputs[0]) if op.outputs else ""


def const_title(op, local: str) -> str | None:
    """``const int32[2]`` for a constant the trace named (``strided_slice/stack_1``,
    ``Const_2``, ``221``); None for one the user or an API named (``scale``, ``zeros``,
    ``while/maximum_iterations``).
    ``local``: its name within the box that holds it."""
    if op.type != "Const" or not op.outputs:
        return None
    if _AUTO_CONST.match(local.rsplit("/", 1)[-1]):
        return f"const {_what(op)}"
    return None


def input_title(op, local: str, fed: bool, fn_kind: str, call_type: str) -> str | None:
    """A placeholder's title by what it holds, or None to keep its name.

    - not fed by anything in the graph: a tensor the function captured (``captured
      float32[8,4]``) or a variable the report does not list (``captured variable``);
    - in a while loop's body or condition: ``loop_vars[1] int32[4]``, ``loop counter``;
    - in another control-flow body (a ``tf.cond`` branch): the tensors its lambdas capture.
    A ``tf.function``'s arguments keep the names the user gave them."""
    if op.type != "Placeholder" or not op.outputs:
        return None
    resource = op.outputs[0].dtype == "resource"
    if not fed:
        return "captured variable" if resource else f"captured {_what(op)}"
    if resource or not (fn_kind in CONTROL_FLOW or fn_kind.startswith("branch")):
        return None
    last = local.rsplit("/", 1)[-1]
    if "While" in call_type:
        if last in ("loop_counter", "maximum_iterations"):
            return last.replace("_", " ")
        m = _LOOP_VAR.match(last)
        if m:
            return f"loop_vars[{m.group(1) or 0}] {_what(op)}"
    return f"captured {_what(op)}"


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``11th``, ``22nd``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def trace_number(scope: str) -> int:
    """The number the trace appended to a scope's last segment (``discriminator_2`` -> 2),
    0 for none: repeated calls of one object are numbered in call order."""
    m = _SUFFIX.match(scope.rsplit("/", 1)[-1])
    return int(m.group(2)) if m else 0


def call_labels(siblings: list[tuple[str, str, bool]]) -> list[str]:
    """Titles for the boxes of one parent, given each as ``(label, scope, named)``; ``named``:
    the label is a user object's name (a layer), which is kept as it is.

    A scope the trace numbered because the same function ran before in this graph
    (``binary_crossentropy_1`` beside ``binary_crossentropy``) is titled as the first;
    siblings left with one title are then told apart by call order: ``binary_crossentropy``,
    ``binary_crossentropy (2nd call)``, ... A lone ``x_1`` keeps its name: nothing shows
    the trace added the suffix.

    >>> call_labels([("bce", "bce", False), ("bce_1", "bce_1", False), ("x_1", "x_1", False)])
    ['bce', 'bce (2nd call)', 'x_1']
    """
    plain = {label for label, _, _ in siblings}
    out = []
    for label, _, named in siblings:
        m = _SUFFIX.match(label)
        out.append(m.group(1) if m and not named and m.group(1) in plain else label)
    same: dict[str, list[int]] = {}
    for i, label in enumerate(out):
        same.setdefault(label, []).append(i)
    for label, idx in same.items():
        if len(idx) < 2:
            continue
        for n, i in enumerate(sorted(idx, key=lambda i: (trace_number(siblings[i][1]), i)), 1):
            if n > 1:
                out[i] = f"{label} ({ordinal(n)} call)"
    return out
