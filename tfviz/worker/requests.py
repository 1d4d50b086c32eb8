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
>>> parse_request(b'{"cmd": "jacobian", "id": "a", "wrt": "W", "out_range": [0, "2"]}').why
'"out_range" must be [start, stop] (two whole numbers) or null, got [0, \\'2\\']'
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, cast

#: What an ``id`` may be: answers carry it back, and the session keeps it in a set.
RequestId = str | int | float | None
MODES = ("auto", "reverse", "forward")
ENCODINGS = ("base64", "list")


@dataclass(frozen=True)
class JacobianRequest:
    id: RequestId
    wrt: str
    of: str = "target"
    via: str | None = None
    out_range: tuple[int, int] | None = None
    in_range: tuple[int, int] | None = None
    mode: str = "auto"
    budget_mb: float | None = None
    encoding: str = "base64"


@dataclass(frozen=True)
class NamesRequest:
    id: RequestId


@dataclass(frozen=True)
class CancelRequest:
    """Stop request ``id`` at its next chunk (no id: the one computing now)."""

    id: RequestId


@dataclass(frozen=True)
class CloseRequest:
    pass


@dataclass(frozen=True)
class AnalyzeRequest:
    """A second analysis: the session answers that it needs a new worker."""

    id: RequestId


@dataclass(frozen=True)
class BadRequest:
    """What is wrong with a request; ``id`` is its id when that much was right."""

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
        )
    if cmd == "names":
        return NamesRequest(rid)
    if cmd == "cancel":
        return CancelRequest(rid)
    if cmd == "close":
        return CloseRequest()
    if cmd == "analyze":
        return AnalyzeRequest(rid)
    raise _Wrong(f"unknown command: {_short(cmd)}")


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


def checked_requests(lines: Iterable[bytes]) -> Iterator[bytes]:
    """The request pipe's lines for the session loop: good requests as they came, bad ones
    as ``__bad__`` requests (answered in order, with their id when it was fine). Ends when
    the pipe closes or breaks, and never raises, so the loop always sees the end."""
    it = iter(lines)
    while True:
        try:
            raw = next(it)
        except StopIteration:
            return
        except (OSError, ValueError):  # the pipe broke or was closed under us: as if it ended
            return
        if not raw.strip():
            continue
        req = parse_request(raw)
        if isinstance(req, BadRequest):
            yield (json.dumps({"cmd": "__bad__", "id": req.id, "why": req.why}) + "\n").encode()
        else:
            yield raw
