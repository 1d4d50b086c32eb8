"""The worker's answers as typed messages: what each JSON line on its stdout means.

The server writes them (:func:`encode`), and both clients, the blocking one
(:mod:`tfviz.worker.client`) and the window's (:mod:`app.worker_client`), read them back
(:func:`decode`), so a field is named in one place. A line of another type, or one whose
fields are not what its type says, decodes to None and is passed over, as a client of an
older or newer worker must.

>>> decode({"type": "progress", "stage": "tracing", "fraction": 0.5})
Progress(stage='tracing', fraction=0.5)
>>> decode({"type": "jacobian_error", "id": 2, "error": {"kind": "too_big"}}).error["kind"]
'too_big'
>>> encode(Failure({"message": "no loss"}))
{'type': 'error', 'error': {'message': 'no loss'}}
>>> decode({"type": "progress", "stage": 3}) is None
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

#: A request's ``id``, carried back on its answers.
RequestId = str | int | float | None


@dataclass(frozen=True)
class Ready:
    """TensorFlow is imported: the worker reads its request."""

    type: ClassVar[str] = "ready"
    tensorflow: str = ""
    pid: int = 0


@dataclass(frozen=True)
class Progress:
    type: ClassVar[str] = "progress"
    stage: str = ""
    fraction: float = 0.0


@dataclass(frozen=True)
class Log:
    """What the script printed (:mod:`tfviz.worker.logbatch`)."""

    type: ClassVar[str] = "log"
    stream: str = "stdout"
    text: str = ""


@dataclass(frozen=True)
class Steps:
    """A watched run's steps, each a point ``{"step", "grad", "update", "weight"}``."""

    type: ClassVar[str] = "steps"
    points: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Result:
    """The analysis: a :class:`~tfviz.report.Report` as its dict (a client decodes it when,
    and where, it wants: the window does so off its GUI thread)."""

    type: ClassVar[str] = "result"
    report: Any = None
    #: what ``tfviz check`` prints, made by the worker when the request asked for it
    #: (``printed``); ``report`` then holds the graph's counts, not the graph
    printed: str | None = field(default=None, metadata={"optional": True})
    #: why the ``--graph`` file asked with ``printed`` could not be written
    graph_error: str | None = field(default=None, metadata={"optional": True})
    #: the exit status the workers of a cluster job agreed on (:mod:`tfviz.worker.together`)
    status: int | None = field(default=None, metadata={"optional": True})


@dataclass(frozen=True)
class Failure:
    """The analysis failed: ``error`` is an :class:`~tfviz.errors.AnalysisError`'s dict
    (``message``, ``file``, ``line``, ``code``, ``detail``, ``candidates``)."""

    type: ClassVar[str] = "error"
    error: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JacobianProgress:
    type: ClassVar[str] = "jacobian_progress"
    id: RequestId = None
    done: int = 0
    total: int = 0


@dataclass(frozen=True)
class JacobianAnswer:
    """A Jacobian (``result``) or a chain-rule split (``chain``), as their dicts."""

    type: ClassVar[str] = "jacobian"
    id: RequestId = None
    result: dict[str, Any] | None = field(default=None, metadata={"optional": True})
    chain: dict[str, Any] | None = field(default=None, metadata={"optional": True})


@dataclass(frozen=True)
class JacobianError:
    """A Jacobian request refused or failed; the session lives on."""

    type: ClassVar[str] = "jacobian_error"
    id: RequestId = None
    error: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Names:
    type: ClassVar[str] = "names"
    id: RequestId = None
    names: list[str] = field(default_factory=list)


Answer = (
    Ready
    | Progress
    | Log
    | Steps
    | Result
    | Failure
    | JacobianProgress
    | JacobianAnswer
    | JacobianError
    | Names
)
TYPES: dict[str, type[Answer]] = {
    t.type: t
    for t in (
        Ready,
        Progress,
        Log,
        Steps,
        Result,
        Failure,
        JacobianProgress,
        JacobianAnswer,
        JacobianError,
        Names,
    )
}
#: The answers that end an ``analyze`` request.
ANALYSIS_ENDS = frozenset({Result.type, Failure.type})

_KINDS: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "str | None": (str, type(None)),
    "int": (int,),
    "int | None": (int, type(None)),
    "float": (int, float),
    "dict[str, Any]": (dict,),
    "list[dict[str, Any]]": (list,),
    "list[str]": (list,),
    "dict[str, Any] | None": (dict, type(None)),
    "RequestId": (str, int, float, type(None)),
    "Any": (object,),
}


def decode(msg: Mapping[str, Any]) -> Answer | None:
    """The typed answer a decoded JSON line holds, or None (another type, or a field of the
    wrong kind)."""
    kind = msg.get("type") if isinstance(msg, Mapping) else None
    cls = TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return None
    values = {}
    for f in dataclasses.fields(cls):
        if f.name not in msg:
            continue
        value, kinds = msg[f.name], _KINDS[str(f.type)]
        if object not in kinds and (isinstance(value, bool) or not isinstance(value, kinds)):
            return None
        values[f.name] = value
    return cls(**values)


def encode(answer: Answer) -> dict[str, Any]:
    """The answer as the JSON object the worker writes."""
    out: dict[str, Any] = {"type": answer.type}
    for f in dataclasses.fields(answer):
        value = getattr(answer, f.name)
        if value is not None or not f.metadata.get("optional"):  # a Jacobian has no chain
            out[f.name] = value
    return out
