"""The analysis worker: ``python -m tfviz.worker``.

It imports TensorFlow at once, says ``ready``, then waits for one request on
stdin and answers with JSON lines on stdout. One process serves one analysis
and exits, so every analysis starts from a clean TensorFlow state, and a
crash or hang in the user's script cannot touch the caller.

Messages (one JSON object per line):

- ``{"type": "ready", "tensorflow": "2.21.0", "pid": 123}``
- ``{"type": "progress", "stage": "tracing the graph", "fraction": 0.5}``
- ``{"type": "log", "stream": "stdout"|"stderr", "text": "..."}``
- ``{"type": "steps", "points": [...]}`` (``check --until`` with ``live``: below)
- ``{"type": "result", "report": {...}}`` (a full :class:`tfviz.report.Report`)
- ``{"type": "error", "error": {"message", "file", "line", "code", "detail", "candidates"}}``

Request (one line on stdin)::

    {"cmd": "analyze", "script": "/path/x.py", "target": null,
     "run": false, "args": [], "step": 1}

- ``target``: a zero-argument function to differentiate (null: ``loss`` when
  the script defines it, else the program is run).
- ``run`` (optional, default false): run the script as a program even if it
  defines ``loss()``.
- ``args`` (optional, default ``[]``): the program's command line, as
  ``python SCRIPT ARGS…`` would get it (``sys.argv[1:]``).
- ``step`` (optional, default 1): diagnose the program's N-th gradient
  computation.
- ``until`` (optional): condition names (``nan``, ``none``, ``zero``,
  ``vanishing``, ``exploding``): watch every step and diagnose the first where
  one holds; ``step`` is then the most steps to run. ``zero_steps`` (how many
  zero steps in a row ``zero`` waits for) and ``record`` (a CSV file written per
  step and variable) go with it.
- ``result_output`` (optional, default ``"full"``): ``"tail"`` keeps only the
  last 64 KB of the script's stdout and stderr in the result, for a caller
  that shows the ``log`` messages (the window).

- ``live`` (optional, default false): with ``until``, send each watched step's
  norms per layer as ``{"type": "steps", "points": [{"step", "grad", "update",
  "weight"}, ...]}`` messages while the program runs (at most one every 0.1 s).
- ``keep`` (optional, default false): keep the session after the result
  and answer ``jacobian`` requests (below).

These are :func:`tfviz.analysis.diagnose.analyze`'s arguments. A malformed request
(``args`` not a list of strings, ``step`` not a whole number ≥ 1) is answered
with an ``error`` message. While a program runs, whatever it prints is sent
as ``log`` messages of at most 64 KB, each sent within 50 ms of its first
character (:mod:`tfviz.logbatch`).


Keeping the session (``"keep": true``)
--------------------------------------

With ``"keep": true`` in the ``analyze`` request the worker does not exit
after its ``result``: it keeps the analyzed session (the loaded script, its
variables, the traced graph) and answers further requests, one JSON line
each, until its stdin closes or it gets ``{"cmd": "close"}``. A new analysis
is a new worker (every analysis starts from a clean TensorFlow state): close
this one's stdin. Requests (see ``docs/jacobian.md`` for the full reference):

- ``{"cmd": "jacobian", "id": ID, "of": "target"|TENSOR, "wrt": NAME,
  "via": TENSOR|null, "out_range": [start, stop]|null,
  "in_range": [start, stop]|null, "of_index"/"wrt_index": [index|null|[start, stop], ...]|null,
  "mode": "auto"|"reverse"|"forward",
  "budget_mb": 512, "encoding": "base64"|"list"}``: the Jacobian
  d of / d wrt (a TENSOR is a graph op id, optionally ``:k``; a NAME is a
  variable's name or tf_name, or a TENSOR). With ``via``, the chain-rule
  split through that tensor.
- ``{"cmd": "cancel", "id": ID}``: stop that request at its next chunk.
- ``{"cmd": "names", "id": ID}``: every name a request may use.
- ``{"cmd": "close"}``: end the worker.

Answers carry the request's ``id``:

- ``{"type": "jacobian_progress", "id", "done", "total"}`` (chunks);
- ``{"type": "jacobian", "id", "result": {...}}``
  (:class:`tfviz.jacobian.data.Jacobian`: ``status`` ok / no_path / cut,
  ``values`` as ``{"dtype", "shape", "data", "encoding"}``, base64 of the
  raw little-endian bytes) or ``{"type": "jacobian", "id", "chain": {...}}``
  (:class:`tfviz.jacobian.data.ChainSplit`) for a ``via`` request;
- ``{"type": "names", "id", "names": [...]}``;
- ``{"type": "jacobian_error", "id", "error": {"kind", "message", ...}}``:
  ``not_found`` (``candidates``), ``not_reachable``, ``too_big``
  (``size_bytes``, ``budget_bytes``, ``offers``), ``cancelled``, ``replay``,
  ``unsupported``, ``bad_request``, ``internal``. The session lives on.

An ``id`` is a string or a number (or absent). Each request is checked into a typed
message first (:mod:`tfviz.workerrequests`): one that is not JSON, has another kind of
``id`` or a field of the wrong type gets a ``bad_request`` answer, in order, carrying its
``id`` when the id itself was fine, and the session serves the next. Closing stdin always
ends the worker (after the request it is computing).
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from tfviz.exitstatus import ExitStatus
from tfviz.logbatch import LogSender, flush_at_exit

#: How much of the script's output a ``result_output: "tail"`` result keeps.
OUTPUT_TAIL = 64 * 1024


class Channel:
    """JSON lines on the original stdout; fd 1 itself now goes to stderr so
    that stray C-level prints cannot corrupt the stream."""

    def __init__(self) -> None:
        fd = os.dup(1)
        os.dup2(2, 1)
        self._out = os.fdopen(fd, "w", encoding="utf-8", buffering=1)
        self._lock = threading.RLock()
        #: The script's output, batched (see :mod:`tfviz.logbatch`).
        self.logs = LogSender(self._write_line, self._lock)

    def send(self, msg: dict[str, Any]) -> None:
        line = json.dumps(msg, allow_nan=True)
        with self._lock:
            self.logs.flush()  # what the script printed before this message comes first
            self._write_line(line)

    def _write_line(self, line: str) -> None:
        self._out.write(line + "\n")
        self._out.flush()


def serve(channel: Channel, request: dict[str, Any], requests: Any = None) -> int:
    from tfviz.analysis.diagnose import analysis
    from tfviz.errors import AnalysisError

    if request.get("cmd") != "analyze":
        channel.send({"type": "error", "error": {"message": f"unknown command: {request.get('cmd')}"}})
        return ExitStatus.ERROR
    try:
        options = program_options(request)
    except ValueError as exc:
        channel.send({"type": "error", "error": {"message": f"bad request: {exc}"}})
        return ExitStatus.ERROR
    keep = request.get("keep") is True
    steps = StepSender(channel.send) if options.get("until") and request.get("live") is True else None
    try:
        try:
            done = analysis(
                request["script"],
                request.get("target"),
                **options,
                progress=lambda stage, frac: channel.send(
                    {"type": "progress", "stage": stage, "fraction": frac}
                ),
                on_text=channel.logs.write,
                on_steps=steps.add if steps is not None else None,
            )
        finally:
            if steps is not None:
                steps.flush()  # every step watched arrives before the result or the error
    except AnalysisError as exc:
        channel.send({"type": "error", "error": exc.to_dict()})
        return ExitStatus.ERROR
    except Exception as exc:  # noqa: BLE001 - reported as data, never as a crash
        import traceback

        channel.send(
            {
                "type": "error",
                "error": {
                    "message": f"internal error in tfviz: {type(exc).__name__}: {exc}",
                    "detail": traceback.format_exc(),
                },
            }
        )
        return ExitStatus.INTERNAL
    report = done.report
    result = report.to_dict(full_graph=True)
    if request.get("result_output") == "tail":
        # The caller has the output from the log messages: don't send 50 MB twice.
        for key in ("stdout", "stderr"):
            result[key] = result.get(key, "")[-OUTPUT_TAIL:]
    channel.send({"type": "result", "report": result})
    if keep and requests is not None:  # the session keeps the step for Jacobian requests
        from tfviz.jacobian.protocol import serve_session
        from tfviz.jacobian.session import Session

        return serve_session(channel.send, Session.from_analysis(done), requests)
    del done  # a check keeps nothing: the step, its graph and the script's objects go now
    return ExitStatus.OK


class StepSender:
    """Watched steps for the window, batched: a ``steps`` message at most every
    :data:`STEP_DELAY_S` seconds (a program takes thousands of steps a second)."""

    def __init__(self, send: Callable[[dict[str, Any]], None]) -> None:
        self._send, self._last = send, 0.0
        self._points: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, point: dict[str, Any]) -> None:
        with self._lock:
            self._points.append(point)
            if time.monotonic() - self._last < STEP_DELAY_S and "fired" not in point:
                return
        self.flush()

    def flush(self) -> None:
        with self._lock:
            points, self._points = self._points, []
            self._last = time.monotonic()
        if points:
            self._send({"type": "steps", "points": points})


#: the longest a watched step waits before it is sent to the window, in seconds
STEP_DELAY_S = 0.1


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
    zero = request.get("zero_steps")
    if zero is not None:
        if isinstance(zero, bool) or not isinstance(zero, int) or zero < 1:
            raise ValueError(f'"zero_steps" must be a whole number of at least 1, got {zero!r}')
        options["zero_steps"] = zero
    record = request.get("record")
    if record is not None:
        if not isinstance(record, str) or not record:
            raise ValueError(f'"record" must be a file path, got {record!r}')
        options["record"] = record
    return options


def main() -> int:
    faulthandler.enable(file=sys.stderr, all_threads=True)
    channel = Channel()
    flush_at_exit(channel.logs)
    from tfviz.script.quiet import import_tensorflow

    tf = import_tensorflow()
    # The engine too (networkx and all, ~0.25 s): a warm spare then spends its
    # analysis analyzing, not importing.
    import tfviz.analysis.diagnose  # noqa: F401

    channel.send({"type": "ready", "tensorflow": tf.__version__, "pid": os.getpid()})
    # The request pipe stays ours on a private fd: the script gets an empty
    # stdin, a kept session reads its further requests from this one.
    requests = os.fdopen(os.dup(0), "rb")
    line = requests.readline()
    detach_stdin()
    if not line:
        return ExitStatus.OK  # stdin closed before any request: nothing was asked
    if not line.strip():
        channel.send({"type": "error",
                      "error": {"message": "bad request: an empty line, not a JSON request"}})
        return ExitStatus.ERROR
    try:
        request = json.loads(line.decode("utf-8", "replace"))
    except json.JSONDecodeError as exc:
        channel.send({"type": "error", "error": {"message": f"bad request: not JSON ({exc})"}})
        return ExitStatus.ERROR
    if not isinstance(request, dict):
        channel.send({"type": "error", "error": {
            "message": f"bad request: expected a JSON object, got {type(request).__name__}"}})
        return ExitStatus.ERROR
    if not isinstance(request.get("script"), str) and request.get("cmd") == "analyze":
        channel.send({"type": "error", "error": {"message": 'bad request: "script" must be a path'}})
        return ExitStatus.ERROR
    if request.get("target") is not None and not isinstance(request.get("target"), str):
        channel.send({"type": "error", "error": {"message": 'bad request: "target" must be a name'}})
        return ExitStatus.ERROR
    # A kept session's requests are checked into typed messages first: a malformed one
    # (an id that is a list, say) is answered with bad_request and the session lives on.
    from tfviz.workerrequests import checked_requests

    return serve(channel, request, checked_requests(requests))


def detach_stdin() -> None:
    """The request has been read: the script gets an empty stdin, so input()
    fails at once with EOFError instead of waiting on the request pipe."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - lives as long as the process


def watch_parent() -> None:
    """End with the process that started us: a killed window or CLI must not
    leave a worker running the user's script."""
    import signal

    from tfviz.procgroup import end_own_group

    parent = os.getppid()
    # A client that dies sends SIGTERM (PR_SET_PDEATHSIG); so does one that ends
    # us on purpose. Either way the program's children go with us.
    signal.signal(signal.SIGTERM, lambda *_: end_own_group())
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass

    def poll() -> None:  # a signal handler waits for the main thread; this does not
        import time

        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                end_own_group()

    threading.Thread(target=poll, name="tfviz-parent-watch", daemon=True).start()


def remove_generated_files() -> None:
    """AutoGraph writes each converted function to a temporary file and deletes
    it at interpreter exit, which ``os._exit`` skips: delete them here."""
    for name, module in list(sys.modules.items()):
        if name.startswith("__autograph_generated_file"):
            path = getattr(module, "__file__", None)
            if path:
                try:
                    os.remove(path)
                except OSError:
                    pass


if __name__ == "__main__":
    from tfviz.procgroup import end_rest_of_group, lead_own_group

    lead_own_group()
    watch_parent()
    code = main()
    sys.stdout.flush()
    remove_generated_files()
    # What the program started ends with it, as its daemonic children would under python;
    # threads it left running must not keep the worker alive.
    end_rest_of_group()
    os._exit(code)
