"""Human-readable output of ``tfviz check``."""

from __future__ import annotations

import contextlib
import os
import re
import textwrap
from collections.abc import Iterator

from tfviz.report import FROZEN_REASON, Problem, Report, WatchSummary
from tfviz.structure.gradient_path import gradient_path, route
from tfviz.structure.hierarchy import Hierarchy
from tfviz.vocabulary import Kind, Severity, Status

_MARK: dict[str, str] = {
    Status.CONNECTED: "ok ",
    Status.DISCONNECTED: "-- ",
    Status.BROKEN: "!! ",
    Kind.ZERO: "0  ",
    Kind.VANISHING: "v  ",
    Kind.EXPLODING: "^  ",
    Kind.CANCELLED: "~  ",
}
_COLOR: dict[str, str] = {
    Status.CONNECTED: "32",
    Status.DISCONNECTED: "33",
    Status.BROKEN: "31",
    Severity.ERROR: "31",
    Severity.WARNING: "33",
    Kind.ZERO: "33",
    Kind.VANISHING: "33",
    Kind.EXPLODING: "33",
    Severity.INFO: "36",
}
#: A NaN or an all-zero gradient is never shown with the plain "connected" tick.
_STATE_OF_KIND: dict[str, str] = {Kind.NAN: Status.BROKEN, Kind.ZERO: Kind.ZERO}


def magnitude_counts(report: Report) -> str:
    """ ", 3 vanishing, 1 exploding": the variables whose gradient arrives at a size that cannot
    train them, for the verdict line ("" when there are none)."""
    counts = [(k, sum(v.magnitude == k for v in report.variables)) for k in (Kind.VANISHING, Kind.EXPLODING)]
    return "".join(f", {n} {k}" for k, n in counts if n)


def _c(text: str, key: str, color: bool) -> str:
    return f"\033[{_COLOR.get(key, '0')}m{text}\033[0m" if color else text


#: the folders paths are printed relative to, innermost last (see :func:`paths_from`)
_FOLDERS: list[str | None] = []


@contextlib.contextmanager
def paths_from(folder: str | None) -> Iterator[None]:
    """Print paths relative to ``folder`` (the command's, which a worker renders for), or as
    they are where it is None (the command's folder is gone)."""
    _FOLDERS.append(folder)
    try:
        yield
    finally:
        _FOLDERS.pop()


def base_folder() -> str | None:
    """The folder paths are printed relative to: :func:`paths_from`'s, else this process's
    (None where it is gone)."""
    if _FOLDERS:
        return _FOLDERS[-1]
    try:
        return os.getcwd()
    except OSError:
        return None


def shown_path(path: str) -> str:
    """``path`` relative to the folder the command runs in, where it is inside it; as it is
    where that folder is gone (removed under the shell) or on another drive.

    >>> shown_path(os.path.join(os.getcwd(), "train.py"))
    'train.py'
    >>> with paths_from(None):
    ...     shown_path("/home/u/train.py")
    '/home/u/train.py'
    """
    base = base_folder()
    if base is None:
        return path
    try:
        rel = os.path.relpath(path, base)
    except (ValueError, OSError):
        return path
    return rel if not rel.startswith("..") else path


def watch_lines(w: WatchSummary, color: bool = False) -> list[str]:
    """What ``check --until`` saw: the condition that fired and where, and the norms over the run."""
    conds = ", ".join(w.until)
    out = []
    if w.fired is not None:
        out.append(
            _c(f"{w.fired} at gradient step {w.step:,} of {w.steps:,} watched", Severity.ERROR, color)
            + f" (--until {conds})"
        )
        out.append(f"  at: {w.at}")
        if w.fired_on:
            out.append(f"  on: {', '.join(w.fired_on)}")
        if w.detail:
            out.extend(textwrap.wrap(w.detail, 100, initial_indent="  ", subsequent_indent="  "))
        out.append("  The program was stopped before this step's update; the step is diagnosed below.")
    elif w.step is not None:
        out.append(
            f"no condition met (--until {conds}) in {w.steps:,} gradient steps;"
            f" the last one, step {w.step:,}, is diagnosed below"
        )
    else:
        out.append(f"no condition met (--until {conds}): {w.at}")
    if w.min_norm is not None and w.max_norm is not None:
        out.append(f"  gradient norms seen: {w.min_norm:.3g} to {w.max_norm:.3g}")
    if w.layers:
        shown = w.layers[:12]
        width = max(len(x.name) for x in shown)
        out.append("  per layer (gradient norm): first step -> last step, smallest, largest")
        for x in shown:
            out.append(f"    {x.name:<{width}}  {_g(x.first)} -> {_g(x.last)}, {_g(x.low)}, {_g(x.high)}")
        if len(w.layers) > len(shown):
            out.append(f"    ... and {len(w.layers) - len(shown)} more (--json lists them all)")
    if w.record:
        out.append(f"  record: {shown_path(w.record)}")
    if w.record_error:
        out.append(_c(f"  {w.record_error}", Severity.WARNING, color))
    return out


def _g(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def frozen_summary(names: list[str]) -> str:
    """One line for the weights Keras holds frozen, counted by the object that holds them:
    transfer learning freezes a base model of hundreds.

    >>> frozen_summary(["base.layers[1].kernel", "base.layers[1].bias", "enc.w"])
    '3 weights frozen in Keras (trainable = False), as the script asks: 2 of base, 1 of enc'
    """
    holders: dict[str, int] = {}
    for name in names:
        holder = re.split(r"[.\[/]", name, maxsplit=1)[0]
        holders[holder] = holders.get(holder, 0) + 1
    shown = ", ".join(f"{n} of {h}" for h, n in list(holders.items())[:4])
    more = f" and {len(holders) - 4} more" if len(holders) > 4 else ""
    weights = "weight" if len(names) == 1 else "weights"
    return f"{len(names)} {weights} frozen in Keras (trainable = False), as the script asks: {shown}{more}"


def render(report: Report, color: bool = False) -> str:
    out: list[str] = []
    if report.watch is not None:
        out.extend(watch_lines(report.watch, color))
        if report.watch.step is None:
            out.extend(f"note: {n}" for n in report.notes)
            return "\n".join(out)
        out.append("")
    head = ("gradients flow" if report.ok else "gradient problems found") + magnitude_counts(report)
    what = "step" if report.mode == "program" else "target"
    out.append(f"{shown_path(report.script)}  {what}: {report.target}  -> {head}")
    if not report.traced:
        out.append(f"(the {what} could not be traced; verdicts come from running it eagerly)")
    out.extend(f"note: {n}" for n in report.notes)
    out.append("")
    out.append(f"Variables ({len(report.variables)}):")
    width = max((len(v.name) for v in report.variables), default=0)
    for v in report.variables:
        state = _STATE_OF_KIND.get(v.kind or "", v.magnitude or v.status)
        mark = _c(_MARK.get(state, "?? "), state, color)
        norm = f"|grad|={v.grad_norm:.3g}" if v.grad_norm is not None else ""
        kind = f" [{v.kind or v.magnitude}]" if v.kind or v.magnitude else ""
        shape = "x".join("?" if d is None else str(d) for d in v.shape) or "scalar"
        out.append(f"  {mark}{v.name:<{width}}  {shape:<12} {v.status}{kind}  {norm}".rstrip())
        if v.status != Status.CONNECTED or v.kind or v.magnitude:
            out.append(f"      {v.explanation}")
    if report.read_not_trained:
        out.append("")
        out.append(f"Read but not trained in this step ({len(report.read_not_trained)}), no problem:")
        frozen = [r.name for r in report.read_not_trained if r.reason == FROZEN_REASON]
        for r in report.read_not_trained:
            if r.reason != FROZEN_REASON:
                out.append(f"  .. {r.name}  {r.reason}")
        if frozen:  # a frozen base model's every weight: one line, listed in full by --json
            out.append(f"  .. {frozen_summary(frozen)}")
    if report.problems:
        out.append("")
        out.append(f"Problems ({len(report.problems)}):")
        h = Hierarchy.of_report(report) if report.graph.ops else None
        for p in report.problems:
            sev = _c(p.severity, p.severity, color)
            where = p.source.label(shown_path) if p.source else "(no source line)"
            out.append(f"  {sev} {p.kind}{_op_words(p, h)} at {where}")
            if p.source and p.source.code:
                out.append(f"      | {p.source.code}")
            if p.message:
                out.append(f"      {p.message}")
            if h is not None and (way := _path_words(report, p, h)):
                out.extend(
                    textwrap.wrap(
                        way,
                        100,
                        initial_indent="      ",
                        subsequent_indent="        ",
                        break_on_hyphens=False,
                    )
                )
            if p.variables:
                out.extend(
                    textwrap.wrap(
                        ", ".join(p.variables),
                        100,
                        initial_indent="      affects: ",
                        subsequent_indent="               ",
                        break_on_hyphens=False,
                    )
                )
            if p.hint:
                out.append(f"      hint: {p.hint}")
    g = report.graph.counts()
    out.append("")
    out.append(f"graph: {g['ops']} ops, {g['edges']} edges, {g['functions']} nested functions")
    return "\n".join(out)


def _op_words(p: Problem, h: Hierarchy | None) -> str:
    """The problem's op as the window names it, in the box that holds it (its layer, else
    its function), with TensorFlow's name beside where it differs:
    `` MatMul 'w2' in layer fc (model/fc/MatMul/b)``, `` Svd 'Svd_4' in contraction_step``."""
    if not p.op:
        return ""
    if h is None or p.op not in h.ops:
        return f" {p.op_type} '{p.op}'"
    shown = h.display_name(p.op)
    layer = h.layer_of(p.op)
    box = f"layer {layer}" if layer else h.where(p.op)
    return (
        f" {p.op_type} '{shown}'"
        + (f" in {box}" if box else "")
        + (f" ({h.ops[p.op].name})" if h.ops[p.op].name != shown else "")
    )


def _path_words(report: Report, p: Problem, h: Hierarchy) -> str:
    """The way from the first variable the problem affects to the op where its gradient is
    cut (or turns NaN), in layers; none where the gradient reaches the target (a variable
    the step never updates gets its gradient: the problem is elsewhere)."""
    if not p.op or not p.variables or f"var:{p.variables[0]}" not in h.ops:
        return ""
    path = gradient_path(report, f"var:{p.variables[0]}")
    names = route(h, path)
    if not path.cut or len(names) < 2:
        return ""
    return "path: " + " › ".join(names)
