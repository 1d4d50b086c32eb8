"""What a script offers, read from its source without running it.

Choosing between a named target and the whole program must not run the
program: its module-level code may train for an hour, or raise (seed 1).

A target is a top-level function callable with no arguments that returns a
value. ``main()`` that parses ``sys.argv``, trains and returns nothing (or an
exit status) is a program's entry point, not a target.

>>> src = '''
... def loss():
...     return tf.reduce_sum(w)
... def main():
...     train()
...     return 0
... def helper(x):
...     return x
... def make_model():
...     return Sequential()
... '''
>>> static_targets(src)
['loss']
"""

from __future__ import annotations

import ast
import functools


def _returns_value(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    stack: list[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return) and node.value is not None:
            v = node.value
            if not (isinstance(v, ast.Constant) and (v.value is None or isinstance(v.value, (int, str)))):
                return True
        stack.extend(ast.iter_child_nodes(node))
    return False


#: Zero-argument functions named like this build things rather than return a loss.
_FACTORY_PREFIXES = ("make_", "build_", "create_", "get_", "load_", "init_", "setup_", "parse_", "main")


def _no_args(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """No parameters at all: a helper with defaults (``make_data(n=256)``) is not a loss."""
    a = fn.args
    return not (a.posonlyargs or a.args or a.kwonlyargs or a.vararg or a.kwarg)


#: what the user's program would have TensorFlow 1 graph mode with
TF1_SWITCHES = ("disable_eager_execution", "disable_v2_behavior")
TF1_REFUSAL = (
    "the program uses TensorFlow 1 graph mode (disable_eager_execution, or tf.gradients in"
    " a tf.Graph run by a Session); tfviz diagnoses TensorFlow 2 programs, where"
    " tape.gradient, tf.function and Keras run eagerly by default"
)


@functools.lru_cache(maxsize=16)
def parsed_text(text: str) -> ast.Module | None:
    """``text`` parsed once for all who ask of the same text (a file changed since is text
    parsed anew): an analysis reads its script's tree for each variable and copy it places;
    None where it is no Python."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _parsed(source: str | ast.Module) -> ast.Module | None:
    """The module's tree: ``source`` parsed, or as given when it is one already (a
    :class:`~tfviz.script.loader.Script`'s, parsed once); None for a syntax error."""
    if isinstance(source, ast.Module):
        return source
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def tf1_switch_line(source: str | ast.Module) -> int | None:
    r"""The first line that turns TensorFlow 1 graph mode on.

    >>> tf1_switch_line("import tensorflow as tf\ntf.compat.v1.disable_eager_execution()\n")
    2
    >>> tf1_switch_line("x = 1\n") is None
    True
    """
    tree = _parsed(source)
    if tree is None:
        return None
    lines = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", getattr(node.func, "id", None)) in TF1_SWITCHES
    ]
    return min(lines) if lines else None


def static_targets(source: str | ast.Module) -> list[str]:
    """Names of the script's zero-argument top-level functions that return a value."""
    tree = _parsed(source)
    if tree is None:
        return []
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            if _no_args(node) and _returns_value(node) and not node.name.startswith(_FACTORY_PREFIXES):
                out.append(node.name)
    return sorted(out)


def losses_with_arguments(source: str | ast.Module) -> list[str]:
    """The script's top-level loss functions that need arguments, as called: tfviz calls a
    target with none, so a ``loss(x)`` is run as a program instead, never as a target.

    >>> losses_with_arguments("def loss(x, y=1):\\n    return x\\ndef mse_loss():\\n    return 1.0\\n")
    ['loss(x, y)']
    """
    tree = _parsed(source)
    if tree is None:
        return []
    return [
        f"{node.name}({', '.join(a.arg for a in node.args.posonlyargs + node.args.args)})"
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and not _no_args(node)
        and (node.name == "loss" or node.name.endswith("_loss"))
        and _returns_value(node)
    ]


def choose_mode(source: str | ast.Module, target: str | None, run: bool) -> str:
    """``"target"`` when a target is named or the script defines ``loss()``;
    otherwise ``"program"``.

    >>> choose_mode("def loss():\\n    return 1.0\\n", None, False)
    'target'
    >>> choose_mode("def loss():\\n    return 1.0\\n", None, True)
    'program'
    >>> choose_mode("print('hi')", None, False)
    'program'
    """
    if target:
        return "target"
    if run:
        return "program"
    return "target" if "loss" in static_targets(source) else "program"
