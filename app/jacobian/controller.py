"""Connects the Jacobian panel to the analysis worker's kept session.

Every worker the analysis takes (:attr:`app.analysis.AnalysisController.workerTaken`)
is attached with :meth:`JacobianController.attach`.
The analysis is sent with ``"keep": true``, so after its result the worker stays
and answers ``jacobian`` requests (:mod:`tfviz.worker.session`); a new
analysis replaces it (the old worker's request pipe is closed and it exits).
A request made while the analysis still runs waits for its result.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QObject, QProcess, Signal

from tfviz.jacobian.data import ChainSplit, Jacobian
from tfviz.report import GraphOp, Report, VariableReport

from ..analysis import AnalysisController
from ..graph.view import GraphView
from ..panels.variables import VariablesPanel
from ..worker_client import Worker
from .menu import add_graph_entries, install_variables_menu
from .panel import NO_SESSION, JacobianPanel


class JacobianController(QObject):
    """The Jacobian panel (``panel``, which the window docks) and the analysis worker's
    kept session that computes what it shows."""

    shown = Signal()  # the panel is to be seen: the window raises its dock and gives it room

    def __init__(
        self,
        analysis: AnalysisController,
        view: GraphView,
        variables: VariablesPanel,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.analysis = analysis
        self.view = view
        #: the report the request names were last indexed for, and that index (:meth:`_named`)
        self._index: tuple[Report | None, dict[str, VariableReport | GraphOp]] = (None, {})
        self.worker: Worker | None = None
        self.script: str | None = None  # the script of the session
        self.current: dict | None = None  # the request being computed (with its "id")
        self.pending: dict | None = None  # asked for before the analysis answered
        self.last_request: dict | None = None  # of / wrt / via of what is shown
        self.last_failed: dict | None = None  # the request of the error shown (its slice offers)
        self.budget_mb: float | None = None  # None: the worker's default (512 MiB)
        self.panel = JacobianPanel()
        self.panel.computeRequested.connect(
            lambda of, wrt, via: self.open(of, wrt, via, *(None, None), *self.panel.slices())
        )
        self.panel.cancelRequested.connect(self.cancel)
        self.panel.offerChosen.connect(self._offer)
        self.panel.opClicked.connect(lambda op: view.select_op(op, background=True))
        view.menu_hooks.append(lambda menu, pos: add_graph_entries(self, menu, view, pos))
        install_variables_menu(self, variables)
        analysis.workerTaken.connect(self.attach)

    # -- the session --------------------------------------------------------------
    def attach(self, w: Worker) -> None:
        """``w`` analyses the script now; it becomes the session once it answers."""
        old, self.worker = self.worker, w
        if old is not None and old is not w:
            self._release(old)
        if self.analysis.script != self.script:  # another script: its names mean nothing here
            self.script, self.last_request, self.pending = self.analysis.script, None, None
            self.panel.show_empty()
            self.panel.set_message("")
        self.current = None
        self.panel.idle()
        w.result.connect(self._session_ready)
        w.error.connect(self._session_failed)
        w.finished.connect(lambda w=w: self._ended(w))
        w.jacobian.connect(self._answer)
        w.jacobian_error.connect(self._error)
        w.jacobian_progress.connect(self._progress)
        w.names.connect(lambda _rid, names: self._names(names))

    def end_session(self) -> None:
        """The window closes: its kept session ends with it, even when the pool that made
        the worker lives on (the worker holds the analyzed program in memory)."""
        w, self.worker = self.worker, None
        if w is not None:
            self._release(w)

    def forget_session(self) -> None:
        """The script is no longer shown (a saved analysis is): its session means nothing here."""
        self.end_session()
        self.script = None
        self.panel.show_empty()

    def _release(self, w: Worker) -> None:
        for sig in (w.jacobian, w.jacobian_error, w.jacobian_progress, w.names):
            try:
                sig.disconnect()
            except (RuntimeError, TypeError):
                pass
        w.close_session()

    def _session_ready(self, _report) -> None:
        w = self.worker
        if w is None:
            return
        w.names_request()
        if self.pending is not None:
            req, self.pending = self.pending, None
            self.open(**req)
        elif self.last_request is not None and self.panel.isVisible():
            self.open(**self.last_request)  # the script was analyzed again: recompute what is shown

    def _session_failed(self, _err) -> None:
        self.pending = None
        self.panel.idle()
        self.panel.show_empty(NO_SESSION)

    def _ended(self, w: Worker) -> None:
        if w is not self.worker:
            return
        self.worker = None
        if self.current is not None:
            self.current = None
            self.panel.idle()
            msg = w.exit_error().get("message") or "the analysis worker ended"
            self.panel.set_message(
                f"The analysis worker ended while computing: {html.escape(msg)}."
                " Press F5 to analyze the script again.",
                "error",
            )

    def alive(self) -> bool:
        return self.worker is not None and self.worker.session_alive()

    # -- requests -----------------------------------------------------------------
    def show(self) -> None:
        self.shown.emit()

    def open(
        self,
        of: str,
        wrt: str,
        via: str = "",
        out_range: list[int] | None = None,
        in_range: list[int] | None = None,
        of_index: list | None = None,
        wrt_index: list | None = None,
    ) -> int | None:
        """Show the panel and compute J(of, wrt) (or the split through ``via``), optionally a
        structured slice of it (``of_index`` / ``wrt_index``: an index or None per dimension);
        returns the request id, or None when it waits for the analysis or there is no session."""
        self.show()
        of = of or "target"
        self.panel.set_display_names(
            {**self.panel.shown_as, **{n: self.display_name(n) for n in (of, wrt, via) if n}}
        )
        self.panel.set_request(of, wrt, via)
        if via:
            of_index = wrt_index = None  # the split compares whole Jacobians
        req = {
            "of": of,
            "wrt": wrt,
            "via": via or "",
            "out_range": out_range,
            "in_range": in_range,
            "of_index": of_index,
            "wrt_index": wrt_index,
        }
        w = self.worker
        if w is None or w.proc.state() == QProcess.ProcessState.NotRunning:
            self.panel.show_empty(NO_SESSION)
            return None
        if not w.answered:
            self.pending = req
            self.panel.computing("Waiting for the analysis to finish…")
            return None
        if self.current is not None:
            w.cancel_request(self.current["id"])
        rid = w.jacobian_request(
            of,
            wrt,
            via or None,
            out_range=out_range,
            in_range=in_range,
            budget_mb=self.budget_mb,
            of_index=of_index,
            wrt_index=wrt_index,
        )
        self.current = dict(req, id=rid)
        what = f"J({of}, {wrt})" + (f" through {via}" if via else "")
        self.panel.computing(f"Computing {what}…")
        return rid

    def _names(self, names: list[str]) -> None:
        """The session's tensor names, each shown as the graph names it."""
        self.panel.set_display_names({n: self.display_name(n) for n in names})
        self.panel.set_names(names)

    def display_name(self, name: str) -> str:
        """A request name as the graph shows it: a variable by its Python path, an op by
        the box that holds it and its title there (``d_conv1 › BiasAdd``), an output past
        the first with its index."""
        h = self.view.hierarchy
        thing, k = self._named(name)
        if h is None or thing is None:
            return name
        node = f"var:{thing.name}" if isinstance(thing, VariableReport) else thing.id
        if node not in h.ops:
            return name
        if node.startswith("var:") or h.user_named(node):
            return h.display_name(node)
        where = h.where(node)
        title = h.display_name(node) + (f":{k}" if k else "")
        return f"{where} › {title}" if where else title

    def _named(self, name: str) -> tuple[VariableReport | GraphOp | None, int]:
        """The variable (by its Python path or TensorFlow name) or the op (by its id or name,
        ``op:k`` for output k) a request name stands for, and the output; indexed once per
        report: the session's every name is looked up as it arrives."""
        report = self.analysis.report
        if report is None or name == "target":
            return None, 0
        if self._index[0] is not report:
            things: dict[str, VariableReport | GraphOp] = {}
            for o in report.graph.ops:
                things.setdefault(o.name, o)
                things[o.id] = o
            for v in report.variables:  # a variable's names before an op's
                things[v.tf_name.split(":")[0]] = things[v.name] = v
            self._index = (report, things)
        things = self._index[1]
        op_id, colon, k = name.rpartition(":")
        if name in things or not (colon and k.isdigit()):
            return things.get(name), 0
        return things.get(op_id), int(k)

    def open_first(self, of: str, wrt: str, via: str = "") -> int | None:
        """A menu's request (:meth:`open`): a batch of feature maps, whose Jacobian unsliced
        is one solid block, opens on one example, and on one channel where the two share
        their last dimension (a conv layer's output and its kernel), with a line saying how
        to choose others (:func:`structured_slice`)."""
        of_index = wrt_index = None
        note = ""
        if not via:
            of_index, wrt_index, note = structured_slice(self._shape(of), self._shape(wrt))
        rid = self.open(of, wrt, via, of_index=of_index, wrt_index=wrt_index)
        if rid is not None and note and self.current is not None:
            self.current["note"] = note
        return rid

    def _shape(self, name: str) -> list[int | None] | None:
        """The shape of a request name (an op's output, ``op:k``, or a variable), as the
        analysis recorded it; None where it is not known."""
        thing, k = self._named(name)
        if isinstance(thing, VariableReport):
            return list(thing.shape)
        shape = thing.outputs[k].shape if thing is not None and k < len(thing.outputs) else None
        return list(shape) if shape else None

    def cancel(self) -> None:
        if self.current is not None and self.worker is not None:
            self.worker.cancel_request(self.current["id"])
            self.panel.cancel_btn.setEnabled(False)
            self.panel.set_message("Cancelling…")
        elif self.pending is not None:
            self.pending = None
            self.panel.idle()
            self.panel.set_message("Cancelled.")

    def _mine(self, rid) -> bool:
        return self.current is not None and rid == self.current["id"]

    def _answer(self, rid, res: Jacobian | ChainSplit) -> None:
        if not self._mine(rid):
            return
        req, self.current = self.current, None
        assert req is not None  # _mine: the current request
        self.last_request = {
            k: req[k] for k in ("of", "wrt", "via", "out_range", "in_range", "of_index", "wrt_index")
        }
        self.panel.show_result(res)
        if req.get("note") and isinstance(res, Jacobian) and res.status == "ok":
            self.panel.add_note(req["note"])

    def _error(self, rid, err: dict) -> None:
        if not self._mine(rid):
            return
        self.last_failed, self.current = self.current, None
        self.panel.show_error(err)

    def _progress(self, rid, done: int, total: int) -> None:
        if self._mine(rid):
            self.panel.set_progress(done, total)

    def _offer(self, k: int) -> None:
        req = self.last_failed
        if req is None or not (0 <= k < len(self.panel.offers)):
            return
        o = self.panel.offers[k]
        self.open(
            req["of"],
            req["wrt"],
            "",
            o.get("out_range"),
            o.get("in_range"),
            o.get("of_index"),
            o.get("wrt_index"),
        )


def structured_slice(
    of_shape: list[int | None] | None, wrt_shape: list[int | None] | None
) -> tuple[list[int | None] | None, list[int | None] | None, str]:
    """(``of_index``, ``wrt_index``, what was chosen) for a first look at J(of, wrt): where
    ``of`` is a batch (its first dimension over 1, three dimensions or more), example 0;
    where ``of`` and ``wrt`` also share their last dimension (a conv layer's output
    channels and its kernel's filters), channel 0 of both. Else nothing is sliced.

    >>> structured_slice([8, 24, 24, 16], [5, 5, 1, 16])
    ([0, None, None, 0], [None, None, None, 0], 'example 0 of 8, channel 0 of 16')
    >>> structured_slice([8, 10], [4, 10])
    (None, None, '')
    """
    if not of_shape or len(of_shape) < 3 or not of_shape[0] or of_shape[0] <= 1:
        return None, None, ""
    of_index: list[int | None] = [0] + [None] * (len(of_shape) - 1)
    note = f"example 0 of {of_shape[0]}"
    wrt_index: list[int | None] | None = None
    channels = of_shape[-1]
    if wrt_shape and len(wrt_shape) >= 2 and channels and channels > 1 and wrt_shape[-1] == channels:
        of_index[-1] = 0
        wrt_index = [None] * (len(wrt_shape) - 1) + [0]
        note += f", channel 0 of {channels}"
    return of_index, wrt_index, note
