"""Variables the loss reads but training never updates.

No gradient is ``None`` here: the variable would get one if asked. The step
just never asks (it is missing from the list passed to ``tape.gradient``,
often because Keras 3 never tracked it) or never applies what it gets (the
gradients are zipped against another list). The variable keeps its initial
value while the loss still falls.

A model the loss reads on purpose (a DQN target network, a frozen teacher,
the discriminator in a generator step) is not an error. What tells them
apart: a ``not_trained`` variable sits in the same model as variables that
*are* trained in this step, or it is a raw ``tf.Variable`` that its Keras
layer never tracked.
"""

from __future__ import annotations

import os
from typing import Any

from tfviz.program.sources import base_variable, tape_keys, variable_ids
from tfviz.report import Problem, ReadNotTrained, Report, Source, VariableReport
from tfviz.script.discover import FoundVariable, ObjectWalk, holders
from tfviz.vocabulary import Kind, Severity, Status

HINT = (
    "Create the weight with self.add_weight(...) in the layer, and pass every variable the loss"
    " should train to tape.gradient and to the optimizer (model.trainable_variables)."
)
LIST_HINT = (
    "Pass every variable the loss should train to tape.gradient and to the optimizer"
    " (model.trainable_variables)."
)
STALE_HINT = (
    "Read model.trainable_variables again after setting `trainable`, and build the optimizer's"
    " list (and any gradient accumulators) from that new list."
)


class _Objects:
    """The script's objects by Python path, for finding a variable's owners."""

    def __init__(self, walk: ObjectWalk) -> None:
        self.by_path: dict[str, Any] = {}
        self._lambdas: dict[int, str] | None = None
        for path, obj in walk.pairs():
            self.by_path.setdefault(path, obj)

    def owners(self, path: str) -> list[tuple[str, Any]]:
        return [(p, self.by_path[p]) for p in holders(path) if p in self.by_path]

    def lambda_reached(self) -> dict[int, str]:
        """ids of what the script's Lambda layers' functions reach, with the layer's name
        (found once: a model's every variable is asked about)."""
        if self._lambdas is None:
            try:
                import keras

                lambdas = [o for o in self.by_path.values() if isinstance(o, keras.layers.Lambda)]
            except ImportError:  # pragma: no cover - Keras ships with TensorFlow
                lambdas = []
            self._lambdas = {
                id(x): layer.name for layer in lambdas for x in _reached_by(getattr(layer, "function", None))
            }
        return self._lambdas

    def name_of(self, obj: Any) -> str | None:
        """The program's shortest name for an object."""
        paths = [p for p, o in self.by_path.items() if o is obj]
        return min(paths, key=len) if paths else None


def _is_layer(obj: Any) -> bool:
    try:
        import keras
    except ImportError:  # pragma: no cover
        return False
    return isinstance(obj, keras.layers.Layer)


def _is_model(obj: Any) -> bool:
    import tensorflow as tf

    try:
        import keras

        if isinstance(obj, keras.Model):
            return True
        if isinstance(obj, keras.layers.Layer):
            return False
    except ImportError:  # pragma: no cover
        pass
    return isinstance(obj, tf.Module)


def _tracked(layer: Any) -> set[int]:
    """ids of the variables a layer tracks (a mirrored one's own copy too)."""
    try:
        bases = [base_variable(w) for w in layer.weights]
    except Exception:  # noqa: BLE001 - a layer that cannot list its weights tracks none
        return set()
    primaries = [getattr(b, "_primary", None) for b in bases]
    return {id(b) for b in bases} | {id(p) for p in primaries if p is not None}


def _reached_by(fn: Any) -> list[Any]:
    """What a Python function reaches besides its arguments: the cells it closes over and the
    module globals it names.

    >>> scale = 3
    >>> def outer():
    ...     shift = 1
    ...     return lambda x: x * scale + shift
    >>> sorted(_reached_by(outer()))
    [1, 3]
    """
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    cells = [c.cell_contents for c in fn.__closure__ or () if _filled(c)]
    names = getattr(fn, "__globals__", {})
    return cells + [names[n] for n in code.co_names if n in names]


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _lambda_reason(f: FoundVariable, objects: _Objects) -> str | None:
    """A variable a Keras ``Lambda`` layer's function reaches (a closure, a global): Keras
    tracks none of those, so the model's trainable_variables leave it out."""
    reached = objects.lambda_reached()
    mine = variable_ids(f.variable) | variable_ids(f.tf_variable)
    name = next((reached[i] for i in mine if i in reached), None)
    if name is None:
        return None
    return (
        f"a tf.Variable that the function of Lambda layer `{name}` uses; Keras tracks"
        " no variable a Lambda reaches that way, so it is missing from the model's"
        " trainable_variables; create it with self.add_weight in a custom layer"
    )


def untracked_reason(f: FoundVariable, objects: _Objects) -> str | None:
    """Why Keras does not know this variable, when it sits in a layer that does not track it
    or a Lambda layer's function reaches it."""
    owners = objects.owners(f.path)
    if not owners:
        return _lambda_reason(f, objects)
    parent_path, parent = owners[-1]
    base = id(base_variable(f.tf_variable))
    if isinstance(parent, (list, tuple)) and len(owners) > 1:
        layer_path, layer = owners[-2]
        if _is_layer(layer) and base not in _tracked(layer):
            attr = parent_path[len(layer_path) :].lstrip(".")
            return (
                f"a raw tf.Variable in the list `{attr}` of layer `{layer.name}`; Keras 3 tracks"
                " only variables made with add_weight, so it is missing from the model's"
                " trainable_variables"
            )
    if _is_layer(parent) and base not in _tracked(parent):
        return (
            f"a raw tf.Variable attribute of layer `{parent.name}`; Keras 3 does not track it, so"
            " it is missing from the model's trainable_variables; create it with self.add_weight"
        )
    return _lambda_reason(f, objects)


def _model_of(f: FoundVariable, objects: _Objects) -> tuple[str, Any] | None:
    """The nearest model (or tf.Module) holding the variable; else its top-level layer."""
    owners = objects.owners(f.path)
    models = [(p, o) for p, o in owners if _is_model(o)]
    if models:
        return models[-1]
    layers = [(p, o) for p, o in owners if _is_layer(o)]
    return layers[0] if layers else None


def _members(model_path: str, model: Any, everyone: list[FoundVariable]) -> set[int]:
    ids = _tracked(model) if _is_layer(model) else {id(v) for v in getattr(model, "variables", ())}
    ids |= {
        id(f.tf_variable)
        for f in everyone
        if f.path.startswith(model_path + ".") or f.path.startswith(model_path + "[")
    }
    return ids


def _shapes(fs: list[FoundVariable]) -> list[tuple[Any, ...]]:
    return [tuple(getattr(f.tf_variable, "shape", ())) for f in fs]


def _trained_target_twins(
    sources: list[FoundVariable], extras: list[FoundVariable], objects: _Objects
) -> dict[str, str]:
    """Variables of an online network whose target network the step trains instead.

    A DQN or DDPG step reads a target network beside the online one it
    trains; both have the same variables. When the step differentiates the
    model the program calls ``target_...`` and leaves its twin untrained, the
    variable lists were swapped: the target network learns, the online one
    never does. Returns the twin's variables with the reason.
    """

    def by_model(fs: list[FoundVariable]) -> dict[str, list[FoundVariable]]:
        out: dict[str, list[FoundVariable]] = {}
        for f in fs:
            owner = _model_of(f, objects)
            if owner is not None:
                out.setdefault(owner[0], []).append(f)
        return out

    trained, read = by_model(sources), by_model(extras)
    out: dict[str, str] = {}
    for name, mine in trained.items():
        if "target" not in name.lower():
            continue
        for other, theirs in read.items():
            if "target" not in other.lower() and _shapes(theirs) == _shapes(mine):
                for f in theirs:
                    out[f.path] = (
                        f"the step differentiates `{name}`, a target network, while its twin"
                        f" `{other}` (the same variables) is read but never trained: pass"
                        f" {other}.trainable_variables"
                    )
    return out


def _holder(f: FoundVariable, owner: tuple[str, Any] | None) -> str:
    """What holds a variable the step reads: its model, else its Keras layer.

    >>> _holder(FoundVariable("block1_conv1/kernel", None, None), None)
    'a weight of layer `block1_conv1`'
    """
    if owner is not None:
        return f"separate model `{owner[0]}`"
    if "/" in f.path:
        return f"a weight of layer `{f.path.rsplit('/', 1)[0]}`"
    return f"`{f.path.split('.')[0].split('[')[0]}`"


def stale_listing(
    f: FoundVariable, sources: list[FoundVariable], capture: Any, objects: _Objects
) -> str | None:
    """Why a variable is missing from the step's list when that list is an old snapshot.

    The program read a layer's ``trainable_variables`` (the list it now
    differentiates comes from there), and only afterwards did this variable
    become one of them: the transfer-learning guide's unfreeze, done after
    the list was built. Nothing else says so; the loss reads the variable as
    a model it never trains.
    """
    mine = variable_ids(f.tf_variable) | variable_ids(f.variable)
    trained: set[int] = set()
    for s in sources:
        trained |= variable_ids(s.tf_variable) | variable_ids(s.variable)
    for listing in getattr(capture, "listings", ()):
        if not listing.ids & trained or listing.ids & mine:
            continue
        try:
            now = listing.layer.trainable_variables
        except Exception:  # noqa: BLE001 - a layer that cannot list its variables now
            continue
        if any(variable_ids(v) & mine for v in now):
            where = listing.where
            read = f"{os.path.basename(where.file)}:{where.line}"
            code = f" (`{where.code.strip()}`)" if where.code else ""
            name = objects.name_of(listing.layer) or listing.layer.name
            return (
                f"trainable now, but not when the step's variable list was read from"
                f" `{name}.trainable_variables` at {read}{code}: the layer holding"
                " it was made trainable after that, so the list passed to"
                f" {capture.api} never includes it"
            )
    return None


def _label(src: Source | None) -> str:
    return f"{os.path.basename(src.file)}:{src.line}" if src else "the gradient call"


def review(
    report: Report,
    sources: list[FoundVariable],
    extras: list[FoundVariable],
    walk: ObjectWalk,
    capture: Any | None,
) -> None:
    """Mark variables the loss reads that this training step never updates (``walk``: of
    the script's objects, :class:`~tfviz.script.discover.ObjectWalk`)."""
    objects = _Objects(walk)
    rows = {r.name: r for r in report.variables}
    source_ids = {id(f.tf_variable) for f in sources}
    everyone = sources + extras
    program = capture is not None
    # The step's StepCapture: read only in program mode (`extras` is empty otherwise), which
    # mypy cannot follow through `program` and `watched`.
    step: Any = capture
    drop: set[str] = set()
    watched = getattr(capture, "watched", None) if program else None
    twins = _trained_target_twins(sources, extras, objects) if program else {}
    for f in extras:
        row = rows.get(f.path)
        if row is None:
            continue
        if watched is not None and not (tape_keys(f.tf_variable) | tape_keys(f.variable)) & watched:
            # Read before the tape opened (a generator run before the critic's tape, a
            # teacher): that tape never watched it, so it is not this step's business.
            opened = f" at {_label(step.tape_at)}" if step.tape_at else ""
            report.read_not_trained.append(
                ReadNotTrained(
                    name=f.path,
                    reason=f"read outside the tape opened{opened}, which does not watch it",
                    tf_name=row.tf_name,
                )
            )
            drop.add(f.path)
            continue
        if row.status != Status.CONNECTED:
            drop.add(f.path)  # read, but no gradient would reach it anyway: not this check's business
            continue
        if f.path in twins:
            _mark(report, row, f, twins[f.path], Severity.ERROR, hint=LIST_HINT)
            continue
        untracked = untracked_reason(f, objects)
        stale = stale_listing(f, sources, capture, objects) if program else None
        owner = _model_of(f, objects)
        trained_beside = owner is not None and bool(
            (_members(owner[0], owner[1], everyone) - {id(f.tf_variable)}) & source_ids
        )
        if trained_beside or untracked or stale:
            where = _label(step.where) if program else "the gradient call"
            why = untracked or stale or f"not in the variable list passed to {step.api} at {where}"
            hint = HINT if untracked else STALE_HINT if stale else LIST_HINT
            _mark(report, row, f, why, Severity.ERROR, hint=hint)
        else:
            report.read_not_trained.append(
                ReadNotTrained(
                    name=f.path,
                    reason=f"{_holder(f, owner)}, not differentiated in this step",
                    tf_name=row.tf_name,
                )
            )
            drop.add(f.path)
    if program:
        _check_updates(report, rows, sources, capture)
    else:
        for f in sources:
            row = rows.get(f.path)
            if row is None:
                continue
            reason = untracked_reason(f, objects)
            if reason:
                _mark(
                    report,
                    row,
                    f,
                    reason + "; loss() differentiates it, but a training step on"
                    " model.trainable_variables would not",
                    Severity.WARNING,
                    keep_status=True,
                )
    report.variables = [r for r in report.variables if r.name not in drop]
    # A variable this step reads but does not differentiate is none of the target's business:
    # what the judge said of it as if it were a source ("never read") goes with it.
    kept = []
    for p in report.problems:
        mine = [v for v in p.variables if v not in drop]
        if mine or not p.variables:
            p.variables = mine
            kept.append(p)
    report.problems = kept
    report.ok = all(r.status == Status.CONNECTED and r.kind is None for r in report.variables) and not any(
        p.severity == Severity.ERROR for p in report.problems
    )


def _check_updates(
    report: Report, rows: dict[str, VariableReport], sources: list[FoundVariable], capture: Any
) -> None:
    """Sources whose gradient the optimizer applies to another variable, or never applies."""
    updates = capture.updates
    if updates is None or not capture.updates_known or any(i is None for i, _ in updates):
        return  # no optimizer call seen, or gradients transformed on the way: cannot tell
    passed = [id(base_variable(p)) for p in capture.passed]
    # TensorFlow gave no gradient for these: there was nothing for the optimizer to apply
    no_gradient = {passed[i] for i, g in enumerate(capture.handed) if g is None and i < len(passed)}
    by_id = {id(base_variable(f.tf_variable)): f for f in sources}
    applied_right: set[int] = set()
    applied_wrong: set[int] = set()
    where = _label(capture.update_at)
    for i, var in updates:
        src, dst = passed[i], id(base_variable(var))
        if src == dst:
            applied_right.add(src)
            continue
        applied_wrong.add(src)
        f = by_id.get(src)
        if f is not None and f.path in rows:
            other = (
                by_id[dst].path
                if dst in by_id
                else (getattr(var, "path", None) or getattr(var, "name", "another variable"))
            )
            _mark(
                report,
                rows[f.path],
                f,
                f"its gradient was applied to `{other}` instead (zip of different lists at {where})",
                Severity.ERROR,
            )
    for key, f in by_id.items():
        row = rows.get(f.path)
        if row is None or row.status != Status.CONNECTED or key in applied_right or key in applied_wrong:
            continue
        if key in passed and key not in no_gradient:
            _mark(
                report,
                row,
                f,
                f"tape.gradient computes its gradient, but the optimizer call at {where} never applies it",
                Severity.ERROR,
            )


def _mark(
    report: Report,
    row: VariableReport,
    f: FoundVariable,
    why: str,
    severity: str,
    keep_status: bool = False,
    hint: str = HINT,
) -> None:
    made = f" (created at {_label(f.source)})" if f.source else ""
    if not keep_status:
        row.status = Status.DISCONNECTED
    row.kind = Kind.NOT_TRAINED
    row.explanation = f"{why}{made}"
    read = _read_op(report, row.name)
    report.problems.append(
        Problem(
            kind=Kind.NOT_TRAINED,
            severity=severity,
            op=read[0],
            op_type=read[1],
            message=f"{f.path} is read by the loss but training never updates it: {why}",
            variables=[f.path],
            source=f.source,
            hint=hint,
        )
    )


def _read_op(report: Report, name: str) -> tuple[str, str]:
    """The op that reads the variable, so the graph can mark it."""
    node = f"var:{name}"
    types_by_id = {o.id: o.type for o in report.graph.ops}
    for e in report.graph.edges:
        if e.src == node and e.dst in types_by_id:
            return e.dst, types_by_id[e.dst]
    return "", ""


def frozen_training(capture: Any, frozen: dict[int, tuple[str, str]]) -> list[Problem]:
    """A problem for each Keras training call before the step on a model with nothing to
    train (:class:`~tfviz.program.capture.FrozenTraining`), naming its frozen weights the
    step read (``frozen``: by the id of each TensorFlow variable, its Python path first)."""
    problems = []
    for call in getattr(capture, "frozen_training", ()):
        mine = {id(getattr(w, "value", w)) for w in call.model.weights}
        problems.append(
            Problem(
                kind=Kind.NOT_TRAINED,
                severity=Severity.ERROR,
                op="",
                op_type="",
                message=call.said(),
                variables=[path for key, (path, _) in frozen.items() if key in mine],
                source=call.where,
                hint=call.hint(),
            )
        )
    return problems


#: TensorFlow's words when a tape that is not persistent is asked a second time
REUSED_TAPE = "A non-persistent GradientTape can only be used to compute one set of gradients"


def reused_tape(capture: Any, found: list[FoundVariable]) -> list[Problem]:
    """An error where the program asks the step's tape for gradients a second time and the
    tape is not persistent: TensorFlow raises there, so what that call asks for is never
    trained (:meth:`~tfviz.program.capture.StepCapture.gradient_again`)."""
    where = getattr(capture, "reused_at", None)
    if where is None:
        return []
    opened = f" opened at {capture.tape_at.label(os.path.basename)}" if capture.tape_at is not None else ""
    asked = [f.path for f in found if id(base_variable(f.tf_variable)) in capture.reused_for]
    return [
        Problem(
            kind=Kind.NOT_TRAINED,
            severity=Severity.ERROR,
            op="",
            op_type="",
            message=(
                f"the step asks the tape{opened} for gradients a second time, and that tape is not"
                f' persistent: TensorFlow raises RuntimeError here ("{REUSED_TAPE}"), so the'
                " program stops before it trains anything"
            ),
            variables=asked,
            source=where,
            hint=(
                "Ask for every gradient in one call (tape.gradient(loss, a + b), then split the"
                " list), or open the tape with tf.GradientTape(persistent=True) and del it after."
            ),
        )
    ]
