"""The worker process's side: read one request, analyze, answer, and keep the session
for Jacobian requests when asked (the protocol: :mod:`tfviz.worker`)."""

from __future__ import annotations

import faulthandler
import gc
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from tfviz.exitstatus import ExitStatus
from tfviz.program import cluster
from tfviz.worker import together
from tfviz.worker.logbatch import LogSender, flush_at_exit
from tfviz.worker.messages import Answer, Failure, Progress, Ready, Result, Steps, encode
from tfviz.worker.requests import AnalyzeRequest, BadRequest, Request, checked_requests, parse_request

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
        #: The script's output, batched (see :mod:`tfviz.worker.logbatch`).
        self.logs = LogSender(self._write_line, self._lock)

    def answer(self, msg: Answer) -> None:
        self.send(encode(msg))

    def send(self, msg: dict[str, Any]) -> None:
        line = json.dumps(msg, allow_nan=True)
        with self._lock:
            self.logs.flush()  # what the script printed before this message comes first
            self._write_line(line)

    def _write_line(self, line: str) -> None:
        self._out.write(line + "\n")
        self._out.flush()


def serve(
    channel: Channel, request: AnalyzeRequest, requests: Iterator[Request | BadRequest] | None = None
) -> int:
    """Analyze as ``request`` asks and answer; with ``keep``, then serve the session's
    requests (already parsed, one typed request each) until they end."""
    from tfviz.analysis.diagnose import analysis
    from tfviz.errors import AnalysisError

    options = request.options
    steps = StepSender(channel.send) if options.get("until") and request.live else None
    try:
        try:
            done = analysis(
                request.script,
                request.target,
                **options,
                progress=lambda stage, frac: channel.answer(Progress(stage, frac)),
                on_text=channel.logs.write,
                on_steps=steps.add if steps is not None else None,
                freeze=True,  # this process ends with the analysis, or its session
            )
        finally:
            if steps is not None:
                steps.flush()  # every step watched arrives before the result or the error
    except AnalysisError as exc:
        return _ended(channel, Failure(exc.to_dict()), ExitStatus.ERROR, None, request)
    except Exception as exc:  # noqa: BLE001 - reported as data, never as a crash
        import traceback

        failure = Failure(
            {
                "message": f"internal error in tfviz: {type(exc).__name__}: {exc}",
                "detail": traceback.format_exc(),
            }
        )
        return _ended(channel, failure, ExitStatus.INTERNAL, None, request)
    report = done.report
    if _STARTED_S is not None:  # the worker's start is part of the analysis's time
        report.timings_s = {"start": _STARTED_S, **report.timings_s}
    task = cluster.joined()
    if task is not None:
        return _ended(channel, None, ExitStatus.OK, report, request, task)
    answer, result = _result(request, report)
    channel.answer(answer)
    _HELD.extend((done, result))
    if request.keep and requests is not None:  # the session keeps the step for Jacobian requests
        from tfviz.jacobian.session import Session
        from tfviz.worker.session import serve_session

        session = Session.from_analysis(done)
        _HELD.append(session)
        return serve_session(channel.send, session, requests)
    return ExitStatus.OK


def _result(request: AnalyzeRequest, report: Any) -> tuple[Result, dict[str, Any]]:
    """The answer for ``report``: printed here when the request asks (``printed``), else whole."""
    printed = printed_for(request.printed, report)
    if printed is not None:
        result = report.to_dict(full_graph=False)
        return Result(result, printed=printed[0], graph_error=printed[1]), result
    result = report.to_dict(full_graph=True)
    if request.result_output == "tail":
        # The caller has the output from the log messages: don't send 50 MB twice.
        for key in ("stdout", "stderr"):
            result[key] = result.get(key, "")[-OUTPUT_TAIL:]
    return Result(result), result


def _ended(
    channel: Channel,
    failure: Failure | None,
    status: int,
    report: Any,
    request: AnalyzeRequest,
    task: cluster.Task | None = None,
) -> int:
    """Answer how the analysis ended; a worker of a cluster job first agrees with the others
    on what is said and the status every worker ends with (:mod:`tfviz.worker.together`)."""
    task = task or cluster.joined()
    if task is None:
        assert failure is not None
        channel.answer(failure)
        return status
    asked = request.printed
    ending = together.Ending(task, str(asked.get("format") or "text") if asked is not None else "text")
    step = None if request.options.get("until") else request.options.get("step", 1)
    answer, status = ending.settle(failure, status, report, lambda r: _result(request, r)[0], step)
    channel.answer(answer)
    _HELD.append(report)
    ending.leave()
    return status


def printed_for(asked: Any, report: Any) -> tuple[str, str | None] | None:
    """What ``tfviz check`` prints of ``report``, made here, with the ``--graph`` file written
    here, where the report already is: the one place a check's report is rendered (sending a
    large model's report whole for the command to decode, rebuild and encode again cost it
    more than printing it: 0.4 s of a 500-layer MLP's). ``asked`` is the request's
    ``printed``: ``{"format": "text"|"json"|"github"|"sarif", "color", "cwd", "graph"}``,
    paths printed relative to ``cwd`` (as they are where it is None or gone: the command's
    folder was removed under it). Returns the text and why the graph could not be written
    (None when it was, or was not asked); None when not asked (the window, the API)."""
    if not isinstance(asked, dict):
        return None
    cwd = asked.get("cwd") if isinstance(asked.get("cwd"), str) else None
    from tfviz.reportformats import FORMATS, formatted
    from tfviz.textreport import paths_from

    fmt = asked.get("format")
    with paths_from(cwd if cwd is not None and os.path.isdir(cwd) else None):
        text = formatted(report, fmt if fmt in FORMATS else "text", color=asked.get("color") is True)
    graph = asked.get("graph")
    if not isinstance(graph, str):
        return text, None
    if not os.path.isabs(graph):
        if cwd is None:
            return text, "the folder it is relative to is gone"
        graph = os.path.join(cwd, graph)
    from tfviz.analysisfile import analysis_json, write_analysis

    return text, write_analysis(graph, analysis_json(report))


#: What an analysis left, held until the worker ends with ``os._exit``: freeing a model,
#: its graphs and the script's objects one by one took longer than analyzing a small
#: script (0.16 s of 0.5 s; a forked worker copies each page it frees into).
_HELD: list[Any] = []


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
            self._send(encode(Steps(points)))


#: the longest a watched step waits before it is sent to the window, in seconds
STEP_DELAY_S = 0.1


#: how long this worker took to import TensorFlow and tfviz's engine before it was ready
#: (``timings_s["start"]``: near 0 in a worker forked from a warm server, which has them)
_STARTED_S: float | None = None


def main() -> int:
    # On a duplicate of the worker's stderr: fd 2 itself is a pipe of tfviz's own while the
    # script runs (tfviz.script.streams), and a crash's trace must reach the client.
    faulthandler.enable(file=os.dup(2), all_threads=True)
    channel = Channel()
    flush_at_exit(channel.logs)
    from tfviz.script.quiet import import_tensorflow

    global _STARTED_S
    began = time.perf_counter()
    tf = import_tensorflow()
    # The engine too (networkx and all, ~0.25 s): a warm spare then spends its
    # analysis analyzing, not importing.
    import tfviz.analysis.diagnose  # noqa: F401

    _STARTED_S = round(time.perf_counter() - began, 3)

    # What is loaded now lives as long as the worker: out of the collector's sight, so its
    # full collections during an analysis do not walk TensorFlow's every object again.
    gc.collect()
    gc.freeze()
    channel.answer(Ready(tf.__version__, os.getpid()))
    # The request pipe stays ours on a private fd: the script gets an empty
    # stdin, a kept session reads its further requests from this one.
    requests = os.fdopen(os.dup(0), "rb")
    line = requests.readline()
    detach_stdin()
    if not line:
        return ExitStatus.OK  # stdin closed before any request: nothing was asked
    if not line.strip():
        channel.answer(Failure({"message": "bad request: an empty line, not a JSON request"}))
        return ExitStatus.ERROR
    request = parse_request(line)
    if isinstance(request, BadRequest):
        channel.answer(Failure({"message": f"bad request: {request.why}"}))
        return ExitStatus.ERROR
    if not isinstance(request, AnalyzeRequest):
        channel.answer(Failure({"message": f"unknown command: {request.cmd}"}))
        return ExitStatus.ERROR
    # A kept session's requests are each parsed once into typed requests: a malformed one
    # (an id that is a list, say) is answered with bad_request and the session lives on.
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
