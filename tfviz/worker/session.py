"""The worker's kept session: ``jacobian`` requests served against a kept analysis.

After an ``analyze`` request with ``"keep": true`` has been answered with
its ``result``, the worker keeps the session and reads further requests,
one JSON object per line, from the request pipe until it closes (or a
``close`` request). The full message reference is in
:mod:`tfviz.worker`'s docstring and ``docs/jacobian.md``.

Each line arrives parsed once into its typed request (:mod:`tfviz.worker.requests`), and
is answered by the handler :data:`HANDLERS` keeps for its type, with a typed answer
(:mod:`tfviz.worker.messages`): a new request touches the parser, its handler and its
answer, each in one place. Requests are read on a thread, so a ``cancel`` is seen while a
Jacobian is computing (it stops at the next chunk boundary); everything else runs in
order on the calling (main) thread, where TensorFlow ran the analysis.
"""

from __future__ import annotations

import queue
import threading
import traceback
from collections.abc import Callable, Iterable
from typing import Any

from tfviz.jacobian.compute import DEFAULT_BUDGET
from tfviz.jacobian.data import JacobianError, split_pieces
from tfviz.jacobian.session import Session
from tfviz.worker import messages
from tfviz.worker.requests import (
    AnalyzeRequest,
    BadRequest,
    CancelRequest,
    CloseRequest,
    JacobianRequest,
    NamesRequest,
    Request,
)

Send = Callable[[dict[str, Any]], None]
#: a request's handler: the session, the request, a callback for progress (done, total), and
#: whether the request has been cancelled; it returns the answer or raises JacobianError
Handler = Callable[[Session, Any, Callable[[int, int], None], Callable[[], bool]], messages.Answer]


def serve_session(send: Send, session: Session, requests: Iterable[Request | BadRequest]) -> int:
    """Answer requests until the pipe closes or ``close``; returns the exit status."""
    inbox: queue.Queue[Request | BadRequest | None] = queue.Queue()
    cancelled: set[Any] = set()
    current: list[Any] = [None]

    def read() -> None:
        for request in requests:
            if isinstance(request, CancelRequest):
                cancelled.add(request.id if request.id is not None else current[0])
                continue
            inbox.put(request)
        inbox.put(None)

    threading.Thread(target=read, name="tfviz-requests", daemon=True).start()
    while True:
        request = inbox.get()
        if request is None or isinstance(request, CloseRequest):
            return 0
        rid = getattr(request, "id", None)
        current[0] = rid

        def progress(done: int, total: int, rid: Any = rid) -> None:
            send(messages.encode(messages.JacobianProgress(rid, done, total)))

        def stopped(rid: Any = rid) -> bool:
            return rid in cancelled or None in cancelled

        try:
            answer = HANDLERS[type(request)](session, request, progress, stopped)
            pieces, message = split_pieces(messages.encode(answer))  # a large matrix goes in pieces, ahead
            for piece in pieces:
                send(piece)
            send(message)
        except JacobianError as exc:
            send(messages.encode(messages.JacobianError(rid, exc.to_dict())))
        except Exception as exc:  # noqa: BLE001 - reported as data, the session lives on
            error = {
                "kind": "internal",
                "message": f"internal error in tfviz: {type(exc).__name__}: {exc}",
                "detail": traceback.format_exc(),
            }
            send(messages.encode(messages.JacobianError(rid, error)))
        finally:
            cancelled.discard(rid)
            cancelled.discard(None)
            current[0] = None


def _names(session: Session, request: NamesRequest, *_: Any) -> messages.Answer:
    return messages.Names(request.id, session.names())


def _bad(session: Session, request: BadRequest, *_: Any) -> messages.Answer:
    raise JacobianError("bad_request", f"bad request: {request.why}")


def _another_analysis(session: Session, request: AnalyzeRequest, *_: Any) -> messages.Answer:
    raise JacobianError(
        "bad_request",
        "this worker already holds an analyzed session; a new"
        " analysis needs a new worker (close this one's stdin)",
    )


def _jacobian(
    session: Session,
    request: JacobianRequest,
    progress: Callable[[int, int], None],
    cancelled: Callable[[], bool],
) -> messages.Answer:
    """A Jacobian, or with ``via`` the chain-rule split of one."""
    common: dict[str, Any] = {
        "mode": request.mode,
        "budget": budget_of(request),
        "progress": progress,
        "cancelled": cancelled,
    }
    if request.via:
        if request.of_index is not None or request.wrt_index is not None:
            raise JacobianError(
                "bad_request",
                "the chain-rule split (via) compares whole Jacobians;"
                " of_index / wrt_index slice a single one: leave out one or the other",
            )
        split = session.chain(request.of, request.wrt, request.via, **common)
        return messages.JacobianAnswer(request.id, chain=split.to_dict(request.encoding))
    j = session.jacobian(
        request.of,
        request.wrt,
        out_range=list(request.out_range) if request.out_range is not None else None,
        in_range=list(request.in_range) if request.in_range is not None else None,
        of_index=request.of_index,
        wrt_index=request.wrt_index,
        **common,
    )
    return messages.JacobianAnswer(request.id, result=j.to_dict(request.encoding))


def budget_of(request: JacobianRequest) -> int:
    """The memory a Jacobian may take, in bytes: the request's ``budget_mb``, or the default.

    >>> budget_of(JacobianRequest(1, "W")) == 512 * 2**20
    True
    >>> budget_of(JacobianRequest(1, "W", budget_mb=8.0))
    8388608
    """
    return int(request.budget_mb * 2**20) if request.budget_mb is not None else DEFAULT_BUDGET


#: each request type's handler: a new request adds its parser, its answer and one line here
HANDLERS: dict[type, Handler] = {
    NamesRequest: _names,
    JacobianRequest: _jacobian,
    AnalyzeRequest: _another_analysis,
    BadRequest: _bad,
}
