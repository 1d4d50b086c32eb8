"""The requests a kept worker session reads, each checked into a typed message first.

After its ``analyze`` result, a worker with ``"keep": true`` reads one JSON request per
line (see :mod:`tfviz.worker`). :func:`parse_request` turns a line into one small
dataclass per kind (:class:`JacobianRequest`, :class:`NamesRequest`,
:class:`CancelRequest`, :class:`CloseRequest`, :class:`AnalyzeRequest`) or a
:class:`BadRequest` saying what is wrong, and never raises. :func:`checked_requests` sits
between the request pipe and the session loop: a good request goes on as it came, a bad
one as the loop's own ``__bad__`` request, answered in order with a ``bad_request``
error, so the session lives on. The loop keeps request ids in a set: an id that is not a
string or a number (a list, an object) used to kill the session, and in a ``cancel`` to
kill the thread reading the pipe, leaving the worker hung even after its stdin closed.

>>> parse_request(b'{"cmd": "names", "id": 3}')
NamesRequest(id=3)
>>> parse_request(b'{"cmd": "cancel", "id": [1]}')
BadRequest(id=None, why='"id" must be a string or a number, got [1]')
>>> parse_request(b'{"cmd": "jacobian", "id": "a", "wrt": ""}').why
'"wrt" must name a variable or a tensor'
>>> parse_request(b'{"cmd": "jacobian", "id": "a", "wrt": "W", "out_range": [0, "2"]}').why
'"out_range" must be [start, stop] (two whole numbers) or null, got [0, \\'2\\']'
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

#: What an ``id`` may be: answers carry it back, and the session keeps it in a set.
RequestId = str | int | float | None
MODES = ("auto", "reverse", "forward")
ENCODINGS = ("base64", "list")


@dataclass(frozen=True)
class JacobianRequest:
    cmd: ClassVar[str] = "jacobian"
    id: RequestId
    wrt: str
    of: str = "target"
    via: str | None = None
    out_range: tuple[int, int] | None = None
    in_range: tuple[int, int] | None = None
    mode: str = "auto"
    budget_mb: float | None = None
    encoding: str = "base64"
    #: a slice of the output and of the input (:func:`tfviz.jacobian.slices.check_spec`)
    of_index: Any = None
    wrt_index: Any = None


@dataclass(frozen=True)
class NamesRequest:
    cmd: ClassVar[str] = "names"
    id: RequestId


@dataclass(frozen=True)
class CancelRequest:
    """Stop request ``id`` at its next chunk (no id: the one computing now)."""

    cmd: ClassVar[str] = "cancel"
    id: RequestId


@dataclass(frozen=True)
class CloseRequest:
    cmd: ClassVar[str] = "close"


@dataclass(frozen=True)
class AnalyzeRequest:
    """An analysis: the first request a worker reads. A kept session answers a second one
    with a ``bad_request``: a new analysis needs a new worker."""

    cmd: ClassVar[str] = "analyze"
    id: RequestId
    script: str = ""
    target: str | None = None
    #: the analysis's keywords (:func:`program_options`): run, args, step, allow_empty, until, ...
    options: dict[str, Any] = field(default_factory=dict)
    #: keep the session for Jacobian requests after the result
    keep: bool = False
    #: send each watched step as it comes (the window's Training dock)
    live: bool = False
    #: what ``tfviz check`` prints, made by the worker (:func:`tfviz.worker.server.printed_for`)
    printed: dict[str, Any] | None = None
    #: "tail": the result keeps only the end of the script's output (the caller has it all)
    result_output: str | None = None


@dataclass(frozen=True)
class BadRequest:
    """What is wrong with a request; ``id`` is its id when that much was right."""

    cmd: ClassVar[str] = "__bad__"
    id: RequestId
    why: str


Request = JacobianRequest | NamesRequest | CancelRequest | CloseRequest | AnalyzeRequest


class _Wrong(Exception):
    pass


def parse_request(raw: bytes | str) -> Request | BadRequest:
    """One request line as a typed message, or a :class:`BadRequest`; never raises."""
    try:
        msg = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, deep nesting
        return BadRequest(None, f"not JSON ({_short(exc)})")
    if not isinstance(msg, dict):
        return BadRequest(None, f"expected a JSON object, got {type(msg).__name__}")
    try:
        rid = _id(msg)
    except _Wrong as exc:
        return BadRequest(None, str(exc))
    try:
        return _typed(msg, rid)
    except _Wrong as exc:
        return BadRequest(rid, str(exc))


def _typed(msg: dict[str, Any], rid: RequestId) -> Request:
    cmd = msg.get("cmd")
    if cmd == "jacobian":
        wrt = _name(msg, "wrt", None)
        if not wrt:
            raise _Wrong('"wrt" must name a variable or a tensor')
        return JacobianRequest(
            id=rid,
            wrt=wrt,
            of=_name(msg, "of", None) or "target",
            via=_name(msg, "via", None),
            out_range=_range(msg, "out_range"),
            in_range=_range(msg, "in_range"),
            mode=_choice(msg, "mode", MODES, "auto"),
            budget_mb=_budget(msg),
            encoding=_choice(msg, "encoding", ENCODINGS, "base64", null_ok=False),
            of_index=_index(msg, "of_index"),
            wrt_index=_index(msg, "wrt_index"),
        )
    if cmd == "names":
        return NamesRequest(rid)
    if cmd == "cancel":
        return CancelRequest(rid)
    if cmd == "close":
        return CloseRequest()
    if cmd == "analyze":
        return _analyze(msg, rid)
    raise _Wrong(f"unknown command: {_short(cmd)}")


def _analyze(msg: dict[str, Any], rid: RequestId) -> AnalyzeRequest:
    script, target = msg.get("script"), msg.get("target")
    if not isinstance(script, str):
        raise _Wrong('"script" must be a path')
    if target is not None and not isinstance(target, str):
        raise _Wrong('"target" must be a name')
    try:
        options = program_options(msg)
    except ValueError as exc:
        raise _Wrong(str(exc)) from None
    printed, output = msg.get("printed"), msg.get("result_output")
    return AnalyzeRequest(
        rid,
        script,
        target,
        options,
        keep=msg.get("keep") is True,
        live=msg.get("live") is True,
        printed=printed if isinstance(printed, dict) else None,
        result_output=output if isinstance(output, str) else None,
    )


def program_options(request: dict[str, Any]) -> dict[str, Any]:
    """``run``, ``args`` and ``step`` of a request, checked.

    >>> program_options({"args": ["--lr", "0.1"], "step": 2})
    {'run': False, 'args': ['--lr', '0.1'], 'step': 2}
    >>> program_options({"step": 0})
    Traceback (most recent call last):
    ...
    ValueError: "step" must be a whole number of at least 1, got 0
    """
    run = request.get("run") or False
    allow_empty = request.get("allow_empty") or False
    args = request.get("args") or []
    step = request.get("step", 1)
    if not isinstance(run, bool):
        raise ValueError(f'"run" must be true or false, got {run!r}')
    if not isinstance(allow_empty, bool):
        raise ValueError(f'"allow_empty" must be true or false, got {allow_empty!r}')
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError(f'"args" must be a list of strings, got {args!r}')
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise ValueError(f'"step" must be a whole number of at least 1, got {step!r}')
    options: dict[str, Any] = {"run": run, "args": list(args), "step": step}
    if allow_empty:
        options["allow_empty"] = True
    options.update(watch_options(request))
    return options


def watch_options(request: dict[str, Any]) -> dict[str, Any]:
    """``until``, ``zero_steps`` and ``record`` of a request (``check --until``), checked.

    >>> watch_options({"until": ["nan"], "zero_steps": 3})
    {'until': ['nan'], 'zero_steps': 3}
    >>> watch_options({"until": ["inf"]})
    Traceback (most recent call last):
    ...
    ValueError: "until": unknown condition 'inf': choose from nan, none, zero, vanishing, exploding (or all)
    """
    from tfviz.program.watch import parse_until

    until = request.get("until")
    if until is None:
        return {}
    if not isinstance(until, list) or not all(isinstance(u, str) for u in until) or not until:
        raise ValueError(f'"until" must be a list of condition names, got {until!r}')
    try:
        options: dict[str, Any] = {"until": parse_until(",".join(until))}
    except ValueError as exc:
        raise ValueError(f'"until": {exc}') from None
    agree = request.get("agree")
    if agree is not None:
        if agree not in ("ride", "apart"):
            raise ValueError(f'"agree" must be "ride" or "apart", got {agree!r}')
        options["agree"] = agree
    zero = request.get("zero_steps")
    if zero is not None:
        if isinstance(zero, bool) or not isinstance(zero, int) or zero < 1:
            raise ValueError(f'"zero_steps" must be a whole number of at least 1, got {zero!r}')
        options["zero_steps"] = zero
    for key, what in (
        ("record", "a file path"),
        ("tensorboard", "a folder path"),
        ("record_tmp", "a file path"),
    ):
        path = request.get(key)
        if path is not None:
            if not isinstance(path, str) or not path:
                raise ValueError(f'"{key}" must be {what}, got {path!r}')
            options[key] = path
    return options


def _id(msg: dict[str, Any]) -> RequestId:
    rid = msg.get("id")
    if (
        rid is None
        or isinstance(rid, str)
        or (type(rid) is int)
        or (type(rid) is float and math.isfinite(rid))
    ):
        return rid
    raise _Wrong(f'"id" must be a string or a number, got {_short(rid)}')


def _name(msg: dict[str, Any], key: str, default: str | None) -> str | None:
    value = msg.get(key, default)
    if value is not None and not isinstance(value, str):
        raise _Wrong(f'"{key}" must be a name, got {_short(value)}')
    return value


def _range(msg: dict[str, Any], key: str) -> tuple[int, int] | None:
    r = msg.get(key)
    if r is None:
        return None
    if not isinstance(r, list) or len(r) != 2 or not all(type(v) is int for v in r):
        raise _Wrong(f'"{key}" must be [start, stop] (two whole numbers) or null, got {_short(r)}')
    return r[0], r[1]


def _choice(
    msg: dict[str, Any], key: str, allowed: tuple[str, ...], default: str, null_ok: bool = True
) -> str:
    value = msg.get(key, default)
    if value is None and null_ok:
        return default
    if value not in allowed:
        raise _Wrong(f'"{key}" must be ' + " or ".join(f'"{a}"' for a in allowed) + f", got {_short(value)}")
    return cast(str, value)  # one of ``allowed``


def _index(msg: dict[str, Any], key: str) -> Any:
    from tfviz.jacobian.data import JacobianError
    from tfviz.jacobian.slices import check_spec

    try:
        return check_spec(msg.get(key), key)
    except JacobianError as exc:
        raise _Wrong(exc.message) from None


def _budget(msg: dict[str, Any]) -> float | None:
    b = msg.get("budget_mb")
    if b is None:
        return None
    if type(b) not in (int, float) or not math.isfinite(b) or b <= 0:
        raise _Wrong(f'"budget_mb" must be a positive number, got {_short(b)}')
    return float(b)


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, Exception) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def checked_requests(lines: Iterable[bytes]) -> Iterator[Request | BadRequest]:
    """The request pipe's lines, each parsed once into its typed request (a bad one into its
    :class:`BadRequest`, answered in order, with its id when that much was fine). Ends when
    the pipe closes or breaks, and never raises, so the loop always sees the end."""
    it = iter(lines)
    while True:
        try:
            raw = next(it)
        except StopIteration:
            return
        except (OSError, ValueError):  # the pipe broke or was closed under us: as if it ended
            return
        if raw.strip():
            yield parse_request(raw)
