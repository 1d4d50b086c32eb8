"""Copies of a variable made before an in-process check, found by their values or by the line
that made them.

A check of a function of the caller's process (:func:`tfviz.check` on a notebook's loss or
step) sees only what runs while it checks. A tensor computed from a variable earlier, such as
a layer's ``build()`` that reshaped its weight in a cell before (the second seed report), has
no recorded lineage there, as it has when tfviz runs the whole script. What the step reads
still tells: a tensor holding exactly a variable's values, reshaped, cast or transposed, was
taken from it, and follows it no more, unless the line that made it is made of literals and
plain data alone (the same values, not the variable's). Its line is the one assignment of the place that holds
it: ``self.<name> = ...`` in the holder's class, or ``<name> = ...`` at the top of the
caller's module (or among a notebook's cells); a line that reads the variable by the place
holding it (``scaled = weight * 0.5``) tells too, where the values cannot.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import re
import textwrap
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tfviz.report import Source
from tfviz.script.discover import holders
from tfviz.script.notebook import session_cells
from tfviz.script.scriptinfo import parsed_text

#: library code, whose classes never assign the attribute a user's layer holds a copy in
_LIBRARIES = ("keras", "tensorflow", "tf_keras", "builtins", "abc")
#: the packages whose functions and classes make a value of what they are given alone: a
#: value built of them and of literals (``tf.constant([1.0, 2.0])``) reads no variable
_VALUE_MAKERS = frozenset({"tensorflow", "keras", "tf_keras", "numpy", "builtins", "math"})
_ATTRIBUTE = re.compile(r"^(?P<holder>.+)\.(?P<name>[A-Za-z_]\w*)$")
_NAME = re.compile(r"^[A-Za-z_]\w*$")


def holds_values_of(tensor: Any, variable: Any) -> bool:
    """Whether ``tensor`` holds exactly the values of ``variable`` (in the same order,
    reshaped; cast to another float type; or, for a matrix, transposed). A variable whose
    elements are all one value (a bias of zeros, a weight of ones) gives no evidence: any
    filled tensor would match it.

    >>> import numpy as np
    >>> w = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> holds_values_of(w.reshape(3, 2), w), holds_values_of(w.T, w), holds_values_of(w * 2, w)
    (True, True, False)
    >>> holds_values_of(np.ones(3, np.float32), np.ones(3, np.float32))
    False
    """
    import numpy as np

    try:
        mine = np.asarray(variable)
        theirs = np.asarray(tensor)
    except Exception:  # noqa: BLE001 - a value that cannot be read here is no evidence
        return False
    if mine.size != theirs.size or mine.size < 2 or mine.dtype.kind != "f" or theirs.dtype.kind != "f":
        return False
    if mine.dtype != theirs.dtype:
        mine = mine.astype(theirs.dtype)
    flat = mine.reshape(-1)
    if not np.all(np.isfinite(flat)) or np.all(flat == flat[0]):
        return False
    if np.array_equal(flat, theirs.reshape(-1)):
        return True
    return bool(mine.ndim == 2 and theirs.shape == mine.T.shape and np.array_equal(mine.T, theirs))


@dataclass(frozen=True)
class Assignment:
    """The line that assigned a place of the caller's objects, and the places its value reads,
    as paths of the walk (``weight`` for ``scaled = weight * 0.5`` at a module's top,
    ``layer.w`` for ``self.w2 = self.w * 2`` in ``layer``'s class)."""

    source: Source
    computes: bool
    reads: frozenset[str] = frozenset()
    #: the value is made of literals, plain data and library calls alone
    #: (``tf.constant([1.0, 2.0, 3.0])``, ``np.eye(3)``): it reads no variable, whatever values it holds
    literal: bool = False


class MadeBefore:
    """Where the caller's objects were made, for one in-process check: ``path`` is the checked
    function's file, ``objects`` looks an object up by its path in the walk of the caller's
    objects. A class's methods are read once for all its instances: a model's many blocks of
    one class ask of that class for each of their variables; the module's top once for each
    name (each of ResNet50's 320 weights asks where ``model`` was assigned: 0.016 s a check)."""

    def __init__(
        self, path: str, objects: Callable[[str], Any], names: Mapping[str, Any] | None = None
    ) -> None:
        self.path = path
        self._objects = objects
        #: the names the checked function's module holds: what a name at its top stands for
        self._names = names or {}
        self._by_class: dict[tuple[type, str], list[Assignment]] = {}
        self._by_name: dict[str, Assignment | None] = {}

    def made_at(self, held_at: str | None) -> Source | None:
        """The line that made what is held at ``held_at`` (:meth:`assignment_of`); where no line
        of the user's assigns that place (a Keras layer's own weight, made by Keras' code), the
        line that assigned the nearest object holding it (``model = keras.Sequential([...])``
        for ``model.layers[0].kernel``), as a script's run records the weight made there."""
        made = self.assignment_of(held_at)
        if made is None and held_at:
            for holder in reversed(holders(held_at)):
                made = self.assignment_of(holder)
                if made is not None:
                    break
        return made.source if made is not None else None

    def assignment_of(self, held_at: str | None) -> Assignment | None:
        """The one assignment of the place ``held_at`` (a path of the walk): of that attribute
        in its holder's class, or of that name at the top of the caller's module (in a
        notebook, among its cells). None where there is no such line, or more than one."""
        if not held_at:
            return None
        if _NAME.match(held_at):
            if held_at not in self._by_name:
                self._by_name[held_at] = _only(_module_assignments(held_at, self.path, self._names))
            return self._by_name[held_at]
        match = _ATTRIBUTE.match(held_at)
        if match is None:
            return None
        holder = self._objects(match["holder"])
        if holder is None:
            return None
        key = (type(holder), match["name"])
        if key not in self._by_class:
            self._by_class[key] = _attribute_assignments(*key)
        made = _only(self._by_class[key])
        if made is None:
            return None
        reads = frozenset(f"{match['holder']}.{name}" for name in made.reads)  # self.w -> layer.w
        return Assignment(made.source, made.computes, reads, made.literal)

    def made_before(self, first: Source, then: Source) -> bool:
        """Whether the line ``first`` ran before ``then``: earlier in one file, or in a cell
        that ran before."""
        if first.file == then.file:
            return first.line < then.line
        cells = session_cells(self.path) or []
        return first.file in cells and then.file in cells and cells.index(first.file) < cells.index(then.file)


def _only(found: list[Assignment]) -> Assignment | None:
    """The one assignment; of several, the one that computes its value (``self.w2 =
    tf.reshape(w, ...)`` beside ``self.w2 = w``, which holds the variable, not a copy)."""
    if len(found) == 1:
        return found[0]
    computed = [made for made in found if made.computes]
    return computed[0] if len(computed) == 1 else None


def _module_assignments(name: str, path: str, names: Mapping[str, Any]) -> list[Assignment]:
    """``<name> = ...`` at the top of the caller's module (in a notebook, of each cell, in the
    order the cells ran), whose other names mean what ``names`` holds. Where each is a
    statement of the module's own body, run one after another, the last is the one whose
    value the name holds: that alone is returned."""
    files = session_cells(path) or [path]
    found: list[Assignment] = []
    straight = True
    for file in files:
        tree = parsed_text("".join(linecache.getlines(file)))
        body = tree.body if tree is not None else []
        for node in _top_level(body):
            value = _assigned(node, lambda t: isinstance(t, ast.Name) and t.id == name)
            if value is not None:
                straight = straight and any(node is top for top in body)
                code = linecache.getline(file, node.lineno).strip()
                reads = frozenset(n.id for n in ast.walk(value) if isinstance(n, ast.Name))
                literal = _literal(value, names)
                found.append(Assignment(Source(file, node.lineno, code), _computes(value), reads, literal))
    return found[-1:] if straight else found


def _top_level(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """The statements run at a module's top, with those of its ``if``, ``for``, ``with`` and
    ``try`` blocks, but not those of its functions and classes."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield node
        for field in ("body", "orelse", "finalbody"):
            yield from _top_level(getattr(node, field, None) or [])
        for handler in getattr(node, "handlers", None) or []:
            yield from _top_level(handler.body)


def _attribute_assignments(cls: type, name: str) -> list[Assignment]:
    """``self.<name> = ...`` in the methods of ``cls`` and its bases, read method by method:
    a class's own source cannot be found where its module has no file (a notebook's
    ``__main__``, a script run by ``runpy``), while each method's code names its file. What
    the value reads is said by attribute name (``self.w`` is ``w``)."""
    found: list[Assignment] = []
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] in _LIBRARIES:
            continue
        for member in vars(klass).values():
            function = inspect.unwrap(getattr(member, "__func__", member))
            if not inspect.isfunction(function):
                continue
            try:
                lines, first = inspect.getsourcelines(function)
                tree = ast.parse(textwrap.dedent("".join(lines)))
            except (OSError, TypeError, SyntaxError, ValueError):
                continue
            file = function.__code__.co_filename
            for node in ast.walk(tree):
                value = _assigned(node, lambda t: _is_self_attribute(t, name))
                if value is not None:
                    line = first + node.lineno - 1  # type: ignore[attr-defined]
                    reads = frozenset(
                        n.attr
                        for n in ast.walk(value)
                        if isinstance(n, ast.Attribute) and _is_self_attribute(n)
                    )
                    where = Source(file, line, linecache.getline(file, line).strip())
                    literal = _literal(value, function.__globals__)
                    found.append(Assignment(where, _computes(value), reads, literal))
    return found


def _is_self_attribute(node: ast.AST, name: str | None = None) -> bool:
    """``self.<name>`` (any name, where ``name`` is None)."""
    return (
        isinstance(node, ast.Attribute)
        and (name is None or node.attr == name)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _assigned(node: ast.AST, matches: Any) -> ast.expr | None:
    """The value ``node`` assigns to a target that ``matches``; None where it assigns none."""
    if isinstance(node, ast.Assign) and any(matches(t) for t in node.targets):
        return node.value
    if isinstance(node, ast.AnnAssign) and node.value is not None and matches(node.target):
        return node.value
    return None


def _literal(value: ast.expr, names: Mapping[str, Any]) -> bool:
    """Whether ``value`` is made of literals, plain data and library calls alone: every name in
    it, looked up in ``names`` (then among the builtins), is a module, a function or class of
    :data:`_VALUE_MAKERS`, or plain data (numbers, text, NumPy arrays, lists of them: the data
    a variable was made from too, ``tf.constant(xs)`` beside ``tf.Variable(xs)``). ``self``, a
    local, a variable, a tensor, a user's helper: it may read a variable.

    >>> import numpy as np
    >>> _literal(ast.parse("np.eye(3) * 2.0").body[0].value, {"np": np})
    True
    >>> _literal(ast.parse("np.array(xs)").body[0].value, {"np": np, "xs": [1.0, 2.0]})
    True
    >>> _literal(ast.parse("np.array(w)").body[0].value, {"np": np, "w": object()})
    False
    """
    for node in ast.walk(value):
        if not isinstance(node, ast.Name):
            continue
        if node.id in names:
            obj = names[node.id]
        elif hasattr(builtins, node.id):
            obj = getattr(builtins, node.id)
        else:
            return False
        if isinstance(obj, types.ModuleType) or _plain(obj):
            continue
        if not (isinstance(obj, type) or inspect.isroutine(obj)):
            return False
        if str(getattr(obj, "__module__", None) or "").split(".")[0] not in _VALUE_MAKERS:
            return False
    return True


def _plain(obj: Any) -> bool:
    """Plain data: a number, text, a NumPy array or scalar, or lists, tuples and dicts of such,
    read through to :data:`_PLAIN_ITEMS` items in all (more, and it counts as not plain: a
    dataset held as nested lists is not read through at each check).

    >>> _plain([[1.0, 2.0], (3, "a")]), _plain([[0.0] * 100] * 200), _plain([object()])
    (True, False, False)
    """
    left = _PLAIN_ITEMS
    stack = [obj]
    while stack:
        item = stack.pop()
        left -= 1
        if left < 0:
            return False
        if item is None or isinstance(item, (bool, int, float, complex, str, bytes)):
            continue
        if type(item).__module__ == "numpy" and hasattr(item, "dtype"):
            continue
        if isinstance(item, dict):
            item = list(item.values())
        if not isinstance(item, (list, tuple)) or len(item) > left:
            return False
        stack.extend(item)
    return True


#: the most items, nested ones included, read through to tell that a value is plain data
_PLAIN_ITEMS = 10_000


def _computes(value: ast.expr) -> bool:
    """Whether a value is computed where it is assigned (a call, an operator), not a name,
    attribute or item handed on."""
    return not isinstance(value, (ast.Name, ast.Attribute, ast.Subscript, ast.Constant))
