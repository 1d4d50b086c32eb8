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
from collections.abc import Callable
from typing import Any

from tfviz.exitstatus import ExitStatus
from tfviz.program import cluster
from tfviz.worker import together
from tfviz.worker.logbatch import LogSender, flush_at_exit
from tfviz.worker.messages import Answer, Failure, Progress, Ready, Result, Steps, encode

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


def serve(channel: Channel, request: dict[str, Any], requests: Any = None) -> int:
    from tfviz.analysis.diagnose import analysis
    from tfviz.errors import AnalysisError

    if request.get("cmd") != "analyze":
        channel.answer(Failure({"message": f"unknown command: {request.get('cmd')}"}))
        return ExitStatus.ERROR
    try:
        options = program_options(request)
    except ValueError as exc:
        channel.answer(Failure({"message": f"bad request: {exc}"}))
        return ExitStatus.ERROR
    keep = request.get("keep") is True
    steps = StepSender(channel.send) if options.get("until") and request.get("live") is True else None
    try:
        try:
            done = analysis(
                request["script"],
                request.get("target"),
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
        return _ended(channel, Failure(exc.to_dict()), ExitStatus.ERROR, None, request, options)
    except Exception as exc:  # noqa: BLE001 - reported as data, never as a crash
        import traceback

        failure = Failure(
            {
                "message": f"internal error in tfviz: {type(exc).__name__}: {exc}",
                "detail": traceback.format_exc(),
            }
        )
        return _ended(channel, failure, ExitStatus.INTERNAL, None, request, options)
    report = done.report
    if _STARTED_S is not None:  # the worker's start is part of the analysis's time
        report.timings_s = {"start": _STARTED_S, **report.timings_s}
    task = cluster.joined()
    if task is not None:
        return _ended(channel, None, ExitStatus.OK, report, request, options, task)
    answer, result = _result(request, report)
    channel.answer(answer)
    _HELD.extend((done, result))
    if keep and requests is not None:  # the session keeps the step for Jacobian requests
        from tfviz.jacobian.session import Session
        from tfviz.worker.session import serve_session

        session = Session.from_analysis(done)
        _HELD.append(session)
        return serve_session(channel.send, session, requests)
    return ExitStatus.OK


def _result(request: dict[str, Any], report: Any) -> tuple[Result, dict[str, Any]]:
    """The answer for ``report``: printed here when the request asks (``printed``), else whole."""
    printed = printed_for(request.get("printed"), report)
    if printed is not None:
        result = report.to_dict(full_graph=False)
        return Result(result, printed=printed[0], graph_error=printed[1]), result
    result = report.to_dict(full_graph=True)
    if request.get("result_output") == "tail":
        # The caller has the output from the log messages: don't send 50 MB twice.
        for key in ("stdout", "stderr"):
            result[key] = result.get(key, "")[-OUTPUT_TAIL:]
    return Result(result), result


def _ended(
    channel: Channel,
    failure: Failure | None,
    status: int,
    report: Any,
    request: dict[str, Any],
    options: dict[str, Any],
    task: cluster.Task | None = None,
) -> int:
    """Answer how the analysis ended; a worker of a cluster job first agrees with the others
    on what is said and the status every worker ends with (:mod:`tfviz.worker.together`)."""
    task = task or cluster.joined()
    if task is None:
        assert failure is not None
        channel.answer(failure)
        return status
    asked = request.get("printed")
    ending = together.Ending(task, str(asked.get("format") or "text") if isinstance(asked, dict) else "text")
    step = None if options.get("until") else options.get("step", 1)
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
    try:
        request = json.loads(line.decode("utf-8", "replace"))
    except json.JSONDecodeError as exc:
        channel.answer(Failure({"message": f"bad request: not JSON ({exc})"}))
        return ExitStatus.ERROR
    if not isinstance(request, dict):
        channel.answer(
            Failure({"message": f"bad request: expected a JSON object, got {type(request).__name__}"})
        )
        return ExitStatus.ERROR
    if not isinstance(request.get("script"), str) and request.get("cmd") == "analyze":
        channel.answer(Failure({"message": 'bad request: "script" must be a path'}))
        return ExitStatus.ERROR
    if request.get("target") is not None and not isinstance(request.get("target"), str):
        channel.answer(Failure({"message": 'bad request: "target" must be a name'}))
        return ExitStatus.ERROR
    # A kept session's requests are checked into typed messages first: a malformed one
    # (an id that is a list, say) is answered with bad_request and the session lives on.
    from tfviz.worker.requests import checked_requests

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
