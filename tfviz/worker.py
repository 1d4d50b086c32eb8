"""The analysis worker: ``python -m tfviz.worker``.

It imports TensorFlow at once, says ``ready``, then waits for one request on
stdin and answers with JSON lines on stdout. One process serves one analysis
and exits, so every analysis starts from a clean TensorFlow state, and a
crash or hang in the user's script cannot touch the caller.

Messages (one JSON object per line):

- ``{"type": "ready", "tensorflow": "2.21.0", "pid": 123}``
- ``{"type": "progress", "stage": "tracing the graph", "fraction": 0.5}``
- ``{"type": "log", "stream": "stdout"|"stderr", "text": "..."}``
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

These are :func:`tfviz.diagnose.analyze`'s arguments. A malformed request
(``args`` not a list of strings, ``step`` not a whole number ≥ 1) is answered
with an ``error`` message. While a program runs, whatever it prints is sent
at once as ``log`` messages.
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import threading
from typing import Any


class Channel:
    """JSON lines on the original stdout; fd 1 itself now goes to stderr so
    that stray C-level prints cannot corrupt the stream."""

    def __init__(self) -> None:
        fd = os.dup(1)
        os.dup2(2, 1)
        self._out = os.fdopen(fd, "w", encoding="utf-8", buffering=1)
        self._lock = threading.Lock()

    def send(self, msg: dict[str, Any]) -> None:
        line = json.dumps(msg, allow_nan=True)
        with self._lock:
            self._out.write(line + "\n")
            self._out.flush()


def serve(channel: Channel, request: dict[str, Any]) -> int:
    from tfviz.diagnose import analyze
    from tfviz.errors import AnalysisError

    if request.get("cmd") != "analyze":
        channel.send({"type": "error", "error": {"message": f"unknown command: {request.get('cmd')}"}})
        return 2
    try:
        options = program_options(request)
    except ValueError as exc:
        channel.send({"type": "error", "error": {"message": f"bad request: {exc}"}})
        return 2
    try:
        report = analyze(
            request["script"],
            request.get("target"),
            **options,
            progress=lambda stage, frac: channel.send(
                {"type": "progress", "stage": stage, "fraction": frac}
            ),
            on_text=lambda stream, text: channel.send({"type": "log", "stream": stream, "text": text}),
        )
    except AnalysisError as exc:
        channel.send({"type": "error", "error": exc.to_dict()})
        return 2
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
        return 3
    channel.send({"type": "result", "report": report.to_dict(full_graph=True)})
    return 0


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
    options = {"run": run, "args": list(args), "step": step}
    if allow_empty:
        options["allow_empty"] = True
    return options


def main() -> int:
    faulthandler.enable(file=sys.stderr, all_threads=True)
    channel = Channel()
    from tfviz.quiet import import_tensorflow

    tf = import_tensorflow()
    channel.send({"type": "ready", "tensorflow": tf.__version__, "pid": os.getpid()})
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    try:
        request = json.loads(line)
    except json.JSONDecodeError as exc:
        channel.send({"type": "error", "error": {"message": f"bad request: {exc}"}})
        return 2
    return serve(channel, request)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)
