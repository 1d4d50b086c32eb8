"""Worker processes for analyses, driven by QProcess so the event loop never blocks.

A worker imports TensorFlow (~7 s), says ``ready`` and then serves one
analysis. The pool keeps two spare workers warm so that opening or reloading
a script, even twice in a row, starts analyzing at once; every analysis uses a
fresh process, so a crash or hang in the user's script only ever kills that
process.

The analysis is sent with ``"keep": true``: after its result the worker keeps
the analyzed session and answers ``jacobian`` / ``names`` requests (the
Jacobian panel, :mod:`app.jacobian`) until it is closed; ``done`` says the
analysis itself is answered, ``finished`` that the process has ended.

A watched run (``until``, ``live``) also sends ``steps`` while the program trains: each
step's norms per layer, for the Training dock (:mod:`app.panels.training`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, QTimer, Signal

from tfviz.jacobian.data import ChainSplit, Jacobian, join_pieces  # Qt-free and TensorFlow-free
from tfviz.procgroup import end_group
from tfviz.report import Report, collector_paused
from tfviz.worker.client import ended_error  # Qt-free and TensorFlow-free
from tfviz.worker.launch import worker_command, worker_environment
from tfviz.worker.messages import (
    ANALYSIS_ENDS,
    Failure,
    JacobianError,
    JacobianProgress,
    Log,
    Names,
    Progress,
    Ready,
    Result,
    Steps,
    decode,
)

#: Messages longer than this are decoded on a background thread.
BIG_LINE = 256 * 1024
#: how a piece of a large Jacobian's data starts (tfviz.jacobian.data.split_pieces)
PIECE_PREFIX = b'{"type": "jacobian_piece"'
#: how a watched run's ``steps`` message starts: not the answer, even when it is large
STEPS_PREFIX = b'{"type": "steps"'
#: ``step`` of a watched run that goes on until the program ends
UNBOUNDED = 2**62


class Worker(QObject):
    """One ``python -m tfviz.worker`` process and its JSON-lines protocol."""

    ready = Signal()
    progress = Signal(str, float)
    log = Signal(str, str)
    steps = Signal(list)  # a watched run's points: [{"step", "grad", "update", "weight"}, ...]
    result = Signal(object)  # a Report, or the report's dict for small messages
    _parsed = Signal(object)
    error = Signal(dict)
    done = Signal()  # the analysis is answered (result or error); a kept session lives on
    jacobian = Signal(object, object)  # request id, Jacobian or ChainSplit (arrays decoded)
    jacobian_progress = Signal(object, int, int)  # request id, done, total
    jacobian_error = Signal(object, dict)  # request id, {"kind", "message", ...}
    names = Signal(object, list)  # request id, every usable name
    crashed = Signal(dict)  # how it ended, as an error: message, file, line, detail (the trace)
    finished = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.is_ready = False
        self.busy = False
        self.answered = False
        self.cancelled = False
        self._parts: list[bytes] = []
        self._parsing = 0
        self._pieces: list[bytes] = []  # a large Jacobian's data, ahead of its answer, unparsed
        self._exit: tuple[int, object] | None = None
        self._err = bytearray()
        self._next_id = 0
        self.proc = QProcess(self)
        env = QProcessEnvironment()
        for key, value in worker_environment().items():
            env.insert(key, value)
        # the window's Qt platform is its own: a script that opens a Matplotlib window must
        # not inherit an ``offscreen`` the window was started with
        env.remove("QT_QPA_PLATFORM")
        self.proc.setProcessEnvironment(env)
        self.proc.readyReadStandardOutput.connect(self._on_stdout)
        self._parsed.connect(self._deliver_parsed)
        self.proc.readyReadStandardError.connect(self._on_stderr)
        self.proc.finished.connect(self._on_finished)
        self.proc.errorOccurred.connect(self._on_error)
        #: the worker's pid, kept after it exits: it leads the group of what the program started
        #: (the process started until the worker says its own, which may be forked elsewhere)
        self._group = 0
        self.proc.started.connect(self._on_started)
        program, *arguments = worker_command()
        self.proc.start(program, arguments)

    @property
    def pid(self) -> int:
        return int(self.proc.processId())

    def analyze(
        self,
        script: str,
        target: str | None,
        *,
        run: bool = False,
        args: list[str] | tuple[str, ...] = (),
        step: int = 1,
        until: Sequence[str] = (),
        live: bool = False,
        zero_steps: int | None = None,
        max_steps: int | None = None,
    ) -> None:
        """Send the request (see :mod:`tfviz.worker`); answers arrive as signals.

        With ``until`` the program is watched step by step (``step`` is then ignored: it runs
        for at most ``max_steps``, None: until it ends), and ``live`` sends the ``steps``."""
        self.busy = True
        req: dict[str, Any] = {
            "cmd": "analyze",
            "script": script,
            "target": target,
            "run": run,
            "args": list(args),
            "step": step,
            "result_output": "tail",  # the Log panel has the output
            "keep": True,
        }  # then serve Jacobian requests
        if until:
            req.update(until=list(until), step=max_steps or UNBOUNDED, live=live)
            if zero_steps is not None:
                req["zero_steps"] = zero_steps
        self.proc.write((json.dumps(req) + "\n").encode())

    # -- the kept session (see tfviz.worker and docs/jacobian.md) --------------------
    def session_alive(self) -> bool:
        return self.answered and self.proc.state() != QProcess.ProcessState.NotRunning

    def _send(self, msg: dict) -> int:
        self._next_id += 1
        msg["id"] = self._next_id
        self.proc.write((json.dumps(msg) + "\n").encode())
        return self._next_id

    def jacobian_request(
        self,
        of: str,
        wrt: str,
        via: str | None = None,
        *,
        out_range: list[int] | None = None,
        in_range: list[int] | None = None,
        mode: str = "auto",
        budget_mb: float | None = None,
        of_index: list | None = None,
        wrt_index: list | None = None,
    ) -> int:
        """Ask for J(of, wrt) (or the chain-rule split through ``via``); returns the request id.
        Answers: ``jacobian_progress``, then ``jacobian`` or ``jacobian_error``."""
        msg: dict[str, Any] = {
            "cmd": "jacobian",
            "of": of or "target",
            "wrt": wrt,
            "via": via or None,
            "out_range": out_range,
            "in_range": in_range,
            "mode": mode,
        }
        if budget_mb is not None:
            msg["budget_mb"] = budget_mb
        if of_index is not None or wrt_index is not None:  # structured slices (docs/jacobian.md)
            msg.update(of_index=of_index, wrt_index=wrt_index)
        return self._send(msg)

    def cancel_request(self, rid: int | None = None) -> None:
        """Stop that request (None: the current one) at its next chunk boundary."""
        self.proc.write((json.dumps({"cmd": "cancel", "id": rid}) + "\n").encode())

    def names_request(self) -> int:
        return self._send({"cmd": "names"})

    def close_session(self) -> None:
        """End the kept session: close the request pipe; the worker exits on its own."""
        if self.proc.state() != QProcess.ProcessState.NotRunning:
            self.proc.closeWriteChannel()
            QTimer.singleShot(5000, self.kill)  # a worker stuck in a request goes anyway

    def exit_error(self) -> dict:
        """How the process ended, as an error dict (for a session that ended mid-request)."""
        code, status = self._exit or (0, None)
        return ended_error(
            -code if status == QProcess.ExitStatus.CrashExit else code, self.stderr_tail().splitlines()
        )

    def kill(self) -> None:
        """End the worker and every process the user's program started."""
        self.cancelled = True
        end_group(self._group)
        if self.proc.state() != QProcess.ProcessState.NotRunning:
            self.proc.kill()

    def _on_started(self) -> None:
        self._group = int(self.proc.processId())

    def stderr_tail(self, limit: int = 20000) -> str:
        return bytes(self._err[-limit:]).decode("utf-8", "replace")

    def _on_stderr(self) -> None:
        data = bytes(self.proc.readAllStandardError())  # type: ignore[call-overload]  # a buffer
        self._err += data
        del self._err[:-200_000]
        if self.busy and data:
            self.log.emit("stderr", data.decode("utf-8", "replace"))

    def _on_stdout(self) -> None:
        self._consume(bytes(self.proc.readAllStandardOutput()))  # type: ignore[call-overload]  # a buffer

    def _consume(self, chunk: bytes) -> None:
        """Frame JSON lines; only the new chunk is searched for line ends.

        Consecutive ``log`` messages of one stream in a chunk are emitted as
        one, so a flood of output costs one insertion per read, not per line."""
        if b"\n" not in chunk:
            self._parts.append(chunk)  # a long line still arriving: no rescans
            return
        head, *lines = chunk.split(b"\n")
        first = b"".join([*self._parts, head])
        self._parts = [lines.pop()]
        logs: list[str] = []
        stream = "stdout"
        for raw in [first, *lines]:
            if not raw.strip():
                continue
            if raw.startswith(PIECE_PREFIX):  # parsed with its answer, off the GUI thread
                self._pieces.append(raw)
                continue
            if len(raw) > BIG_LINE:
                self._emit_log(stream, logs)
                self._parse_in_background(raw)
                continue
            try:
                msg = json.loads(raw)
            except json.JSONDecodeError:
                msg = {"type": "log", "stream": "stdout", "text": raw.decode("utf-8", "replace") + "\n"}
            if isinstance(msg, dict) and msg.get("type") == "log":
                s = str(msg.get("stream", "stdout"))
                if s != stream:
                    self._emit_log(stream, logs)
                    stream = s
                logs.append(str(msg.get("text", "")))
                continue
            self._emit_log(stream, logs)
            if isinstance(msg, dict):
                self._dispatch(msg)
        self._emit_log(stream, logs)

    def _emit_log(self, stream: str, texts: list[str]) -> None:
        if texts:
            self.log.emit(stream, "".join(texts))
            texts.clear()

    def _parse_in_background(self, raw: bytes) -> None:
        """Decode a large message (the result) off the GUI thread.

        json.loads of a ResNet-sized report takes tens of milliseconds, and so
        does rebuilding the dataclasses; the GIL is handed back every few
        milliseconds, so the event loop keeps running meanwhile.
        """
        if not raw.startswith(STEPS_PREFIX):  # a watched run's steps still come before it
            self.answered = True  # the answer has arrived; the process may exit now
        self._parsing += 1

        def work() -> None:
            msg = {}
            try:
                with collector_paused():  # a large tree of new objects, none in a cycle
                    msg = json.loads(raw)
                if msg.get("type") == "result":
                    msg["report"] = Report.from_dict(msg.get("report") or {})
                elif msg.get("type") == "jacobian":
                    msg = decode_jacobian(msg)
            except Exception as exc:  # noqa: BLE001 - shown in the window
                if raw.startswith(STEPS_PREFIX):
                    msg = {}  # a batch of the live record lost: the run and its answer go on
                elif isinstance(msg, dict) and msg.get("type") == "jacobian":
                    msg = {
                        "type": "jacobian_error",
                        "id": msg.get("id"),
                        "error": {"kind": "internal", "message": f"could not read the Jacobian: {exc}"},
                    }
                else:
                    msg = {
                        "type": "error",
                        "error": {"message": f"could not read the analysis result: {exc}"},
                    }
            self._parsed.emit(msg)

        threading.Thread(target=work, name="tfviz-parse", daemon=True).start()

    def _decode_in_background(self, msg: dict, pieces: list[bytes]) -> None:
        """Parse a Jacobian's pieces, join them and decode its arrays on a thread: 150 MB of
        base64 is seconds of work, and the event loop gets its turn between pieces (one
        ``json.loads`` of it all would hold the GIL for most of a second)."""
        self._parsing += 1

        def work() -> None:
            out = msg
            try:
                out = decode_jacobian(join_pieces(msg, [json.loads(p) for p in pieces]))
            except Exception as exc:  # noqa: BLE001 - shown in the panel
                out = {
                    "type": "jacobian_error",
                    "id": msg.get("id"),
                    "error": {"kind": "internal", "message": f"could not read the Jacobian: {exc}"},
                }
            self._parsed.emit(out)

        threading.Thread(target=work, name="tfviz-decode", daemon=True).start()

    def _dispatch(self, msg: dict) -> None:
        """Hand an answer (:mod:`tfviz.worker.messages`) to its signal. A Jacobian is taken
        apart here: its arrays may already be decoded, off the GUI thread."""
        if msg.get("type") == "jacobian":
            self._jacobian(msg)
            return
        answer = decode(msg)
        if answer is None and msg.get("type") in ANALYSIS_ENDS:  # never leave the window waiting
            answer = Failure({"message": "the analysis worker sent an answer tfviz cannot read"})
        if isinstance(answer, Ready):
            if answer.pid > 0:  # a worker forked by a warm server is not the process Qt started
                self._group = answer.pid
            self.is_ready = True
            self.ready.emit()
        elif isinstance(answer, Progress):
            self.progress.emit(answer.stage, float(answer.fraction))
        elif isinstance(answer, Log):
            self.log.emit(answer.stream, answer.text)
        elif isinstance(answer, Steps):
            self.steps.emit(answer.points)
        elif isinstance(answer, Result):
            self.answered = True
            self.result.emit(answer.report or {})
            self.done.emit()
        elif isinstance(answer, Failure):
            self.answered = True
            self.error.emit(answer.error)
            self.done.emit()
        elif isinstance(answer, JacobianProgress):
            self.jacobian_progress.emit(answer.id, answer.done, answer.total)
        elif isinstance(answer, JacobianError):
            self._pieces = []
            self.jacobian_error.emit(answer.id, answer.error)
        elif isinstance(answer, Names):
            self.names.emit(answer.id, answer.names)

    def _jacobian(self, msg: dict) -> None:
        if self._pieces:  # its data came in pieces: joined and decoded off the GUI thread
            pieces, self._pieces = self._pieces, []
            self._decode_in_background(msg, pieces)
            return
        try:
            if "decoded" not in msg:
                msg = decode_jacobian(msg)
        except Exception as exc:  # noqa: BLE001 - shown in the panel
            self.jacobian_error.emit(
                msg.get("id"), {"kind": "internal", "message": f"could not read the Jacobian: {exc}"}
            )
            return
        self.jacobian.emit(msg.get("id"), msg["decoded"])

    def _on_error(self, err) -> None:
        if err == QProcess.ProcessError.FailedToStart:
            self.crashed.emit({"message": f"the analysis worker could not start: {self.proc.errorString()}"})
            self.finished.emit()

    def _on_finished(self, code: int, status) -> None:
        end_group(self._group)  # what the program started goes with its worker
        self._on_stdout()
        self._consume(b"\n")  # a last line without its newline still counts
        self._exit = (code, status)
        if self._parsing:
            return  # finish once the result has been decoded and delivered
        self._report_exit()

    def _deliver_parsed(self, msg: dict) -> None:
        self._parsing -= 1
        self._dispatch(msg)
        if self._exit is not None and not self._parsing:
            self._report_exit()

    def _report_exit(self) -> None:
        assert self._exit is not None  # called once the process has finished
        code, status = self._exit
        if not self.answered and not self.cancelled:
            # A signal ends a crashed process; ended_error takes it as a negative status.
            self.crashed.emit(
                ended_error(
                    -code if status == QProcess.ExitStatus.CrashExit else code,
                    self.stderr_tail().splitlines(),
                )
            )
        self.finished.emit()


def decode_jacobian(msg: dict) -> dict:
    """A ``jacobian`` answer with its result rebuilt (``msg["decoded"]``: a Jacobian or a
    ChainSplit) and every array decoded (each :class:`~tfviz.jacobian.data.Array` keeps its
    own), so the GUI thread never decodes base64; large answers run this on the parse thread."""
    if msg.get("chain") is not None:
        split = ChainSplit.from_dict(msg["chain"])
        for a in (split.j_yh.values, split.j_hx.values, split.j_yx.values, split.product, split.tf_gradients):
            if a is not None:
                a.to_numpy()
        msg["decoded"] = split
    else:
        j = Jacobian.from_dict(msg.get("result") or {})
        j.array()
        msg["decoded"] = j
    msg.pop("result", None)
    msg.pop("chain", None)
    return msg


class WorkerPool(QObject):
    """Hands out workers and keeps ``spares`` (two) warming up behind the scenes.

    A worker takes seconds to import TensorFlow, an analysis of a small script well
    under one: with a single spare, F5 pressed again as soon as a result shows waits
    for the replacement's import. Two spares keep the next analysis warm too, for
    about 200 MB of memory more. They start one after the other (the second once the
    first is ready), and a replacement waits until the analysis that took a spare has
    answered, so its TensorFlow import does not compete with that analysis for the CPU
    (it still may with the next one, started within seconds: ~10% slower on 2 cores).
    """

    def __init__(self, parent=None, spare: bool = True, spares: int = 2):
        super().__init__(parent)
        self.keep_spare = spare
        self.spares = max(1, spares)
        self._spare: Worker | None = None  # handed out next
        self._more: list[Worker] = []  # the other spares, oldest first
        self._closing = False
        if spare:
            QTimer.singleShot(0, self._ensure_spare)

    def _alive(self) -> list[Worker]:
        return [
            w
            for w in (self._spare, *self._more)
            if w is not None and w.proc.state() != QProcess.ProcessState.NotRunning
        ]

    def _ensure_spare(self) -> None:
        if self._closing or not self.keep_spare:
            return
        alive = self._alive()
        if len(alive) < self.spares and all(w.is_ready for w in alive):
            w = Worker(self)
            w.ready.connect(self._ensure_spare)  # then the next one, if one is still missing
            alive.append(w)
        self._spare, self._more = alive[0], alive[1:]

    def take(self) -> Worker:
        """A worker for one analysis (a warm spare if there is one), and start a new spare:
        at once when none is left, else once this analysis has answered."""
        alive = self._alive()
        ready = [s for s in alive if s.is_ready]
        w = (ready or alive)[0] if alive else Worker(self)
        rest = [s for s in alive if s is not w]
        self._spare, self._more = (rest[0], rest[1:]) if rest else (None, [])
        w.finished.connect(w.deleteLater)
        if rest:
            w.done.connect(self._ensure_spare)
            w.finished.connect(self._ensure_spare)  # cancelled or crashed before answering
        else:
            QTimer.singleShot(0, self._ensure_spare)
        return w

    def spare_ready(self) -> bool:
        return self._spare is not None and self._spare.is_ready

    def settled(self) -> bool:
        """Every spare is started and ready: nothing is importing TensorFlow."""
        alive = self._alive()
        return len(alive) >= self.spares and all(w.is_ready for w in alive)

    def shutdown(self) -> None:
        self._closing = True
        for w in self.findChildren(Worker):
            w.kill()
            w.proc.waitForFinished(1000)
