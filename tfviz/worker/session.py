"""The worker's kept session: ``jacobian`` requests served against a kept analysis.

After an ``analyze`` request with ``"keep": true`` has been answered with
its ``result``, the worker keeps the session and reads further requests,
one JSON object per line, from the request pipe until it closes (or a
``close`` request). The full message reference is in
:mod:`tfviz.worker`'s docstring and ``docs/jacobian.md``.

Requests are read on a thread, so a ``cancel`` is seen while a Jacobian is
computing (it stops at the next chunk boundary); everything else runs in
order on the calling (main) thread, where TensorFlow ran the analysis.
"""

from __future__ import annotations

import json
import queue
import threading
import traceback
from collections.abc import Callable
from typing import Any, BinaryIO

from tfviz.jacobian.compute import DEFAULT_BUDGET
from tfviz.jacobian.data import JacobianError, split_pieces
from tfviz.jacobian.session import Session
from tfviz.jacobian.slices import check_spec

Send = Callable[[dict[str, Any]], None]


def serve_session(send: Send, session: Session, requests: BinaryIO) -> int:
    """Answer requests until the pipe closes or ``close``; returns the exit status."""
    inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
    cancelled: set[Any] = set()
    current: list[Any] = [None]

    def read() -> None:
        for raw in requests:
            if not raw.strip():
                continue
            try:
                msg = json.loads(raw.decode("utf-8", "replace"))
            except json.JSONDecodeError as exc:
                msg = {"cmd": "__bad__", "why": f"not JSON ({exc})"}
            if not isinstance(msg, dict):
                msg = {"cmd": "__bad__", "why": f"expected a JSON object, got {type(msg).__name__}"}
            if msg.get("cmd") == "cancel":
                cancelled.add(msg.get("id", current[0]))
                continue
            inbox.put(msg)
        inbox.put(None)

    threading.Thread(target=read, name="tfviz-requests", daemon=True).start()
    while True:
        msg = inbox.get()
        if msg is None or msg.get("cmd") == "close":
            return 0
        rid = msg.get("id")
        current[0] = rid
        try:
            answer = handle(session, msg, send, lambda rid=rid: rid in cancelled or None in cancelled)  # type: ignore[misc]
            pieces, answer = split_pieces(answer)  # a large matrix goes in pieces, ahead of it
            for piece in pieces:
                send(piece)
            send(answer)
        except JacobianError as exc:
            send({"type": "jacobian_error", "id": rid, "error": exc.to_dict()})
        except Exception as exc:  # noqa: BLE001 - reported as data, the session lives on
            send(
                {
                    "type": "jacobian_error",
                    "id": rid,
                    "error": {
                        "kind": "internal",
                        "message": f"internal error in tfviz: {type(exc).__name__}: {exc}",
                        "detail": traceback.format_exc(),
                    },
                }
            )
        finally:
            cancelled.discard(rid)
            cancelled.discard(None)
            current[0] = None


def handle(
    session: Session, msg: dict[str, Any], send: Send, cancelled: Callable[[], bool]
) -> dict[str, Any]:
    """One request's answer (a message dict), or a JacobianError."""
    cmd, rid = msg.get("cmd"), msg.get("id")
    if cmd == "__bad__":
        raise JacobianError("bad_request", f"bad request: {msg.get('why')}")
    if cmd == "names":
        return {"type": "names", "id": rid, "names": session.names()}
    if cmd == "analyze":
        raise JacobianError(
            "bad_request",
            "this worker already holds an analyzed session; a new"
            " analysis needs a new worker (close this one's stdin)",
        )
    if cmd != "jacobian":
        raise JacobianError("bad_request", f"unknown command: {cmd!r}")
    opts = options(msg)

    def progress(done: int, total: int) -> None:
        send({"type": "jacobian_progress", "id": rid, "done": done, "total": total})

    common = {"mode": opts["mode"], "budget": opts["budget"], "progress": progress, "cancelled": cancelled}
    if opts["via"]:
        if opts["of_index"] is not None or opts["wrt_index"] is not None:
            raise JacobianError(
                "bad_request",
                "the chain-rule split (via) compares whole Jacobians;"
                " of_index / wrt_index slice a single one: leave out one or the other",
            )
        split = session.chain(opts["of"], opts["wrt"], opts["via"], **common)
        return {"type": "jacobian", "id": rid, "chain": split.to_dict(opts["encoding"])}
    j = session.jacobian(
        opts["of"],
        opts["wrt"],
        out_range=opts["out_range"],
        in_range=opts["in_range"],
        of_index=opts["of_index"],
        wrt_index=opts["wrt_index"],
        **common,
    )
    return {"type": "jacobian", "id": rid, "result": j.to_dict(opts["encoding"])}


def options(msg: dict[str, Any]) -> dict[str, Any]:
    """A ``jacobian`` request's fields, checked.

    >>> options({"wrt": "W"})["budget"] == 512 * 2**20
    True
    >>> options({"wrt": ""})
    Traceback (most recent call last):
    ...
    tfviz.jacobian.data.JacobianError: "wrt" must name a variable or a tensor
    """

    def text(key: str, default: str | None) -> str | None:
        value = msg.get(key, default)
        if value is not None and not isinstance(value, str):
            raise JacobianError("bad_request", f'"{key}" must be a name, got {value!r}')
        return value

    wrt = text("wrt", "")
    if not wrt:
        raise JacobianError("bad_request", '"wrt" must name a variable or a tensor')
    budget_mb = msg.get("budget_mb")
    if budget_mb is not None and (
        isinstance(budget_mb, bool) or not isinstance(budget_mb, (int, float)) or budget_mb <= 0
    ):
        raise JacobianError("bad_request", f'"budget_mb" must be a positive number, got {budget_mb!r}')
    encoding = msg.get("encoding", "base64")
    if encoding not in ("base64", "list"):
        raise JacobianError("bad_request", f'"encoding" must be "base64" or "list", got {encoding!r}')
    return {
        "of": text("of", "target") or "target",
        "wrt": wrt,
        "via": text("via", None),
        "out_range": msg.get("out_range"),
        "in_range": msg.get("in_range"),
        "of_index": check_spec(msg.get("of_index"), "of_index"),
        "wrt_index": check_spec(msg.get("wrt_index"), "wrt_index"),
        "mode": msg.get("mode") or "auto",
        "encoding": encoding,
        "budget": int(budget_mb * 2**20) if budget_mb is not None else DEFAULT_BUDGET,
    }
