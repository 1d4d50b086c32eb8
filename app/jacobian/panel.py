"""The Jacobian panel: d of / d wrt as a heatmap, or the chain-rule split as four.

It only shows and asks; :class:`app.jacobian.controller.JacobianController` sends
the requests to the analysis worker's kept session and hands the answers back.

Once the shapes of the two tensors are known (from an answer, or from a "too big"
refusal), a row of controls, one per dimension and labelled with its size, picks
one index or all of it (:mod:`tfviz.jacobian.slices`): "batch element 0, channel
3", not a flat index range. Export writes on a thread, so a large CSV does not
stop the window.
"""

from __future__ import annotations

import html
import os
import threading
from collections import Counter

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMenu,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from tfviz.jacobian.data import Array, ChainSplit, Jacobian, TensorRef, fmt_bytes
from tfviz.jacobian.slices import Spec, format_spec, kept_shape, select

from .. import theme
from . import saving
from .heatmap import Heatmap

EMPTY = (
    "No Jacobian yet. Right-click a node or an edge in the graph and choose “Jacobian of this "
    "w.r.t. …”, select two nodes and right-click one, or right-click a variable in Variables. "
    "Or name the tensors above and press Compute."
)
NO_SESSION = "Open and analyze a script first: the Jacobian is computed from the analyzed step."


def element(ref: TensorRef, flat: int) -> str:
    """``W[2, 0]``: the flat element index in the tensor's own shape."""
    if not ref.shape:
        return ref.name
    idx = np.unravel_index(flat, ref.shape)
    return f"{ref.name}[{', '.join(str(int(i)) for i in idx)}]"


def axis_label(ref: TensorRef, rng: list[int] | None, what: str, spec: Spec | None = None) -> str:
    shape = "(" + ", ".join(map(str, ref.shape)) + (",)" if len(ref.shape) == 1 else ")")
    name = f"{ref.name}[{format_spec(spec)}]" if spec else ref.name
    n = int(np.prod(kept_shape(spec, ref.shape), dtype=np.int64)) if spec else ref.size
    if rng:
        return f"{name} {shape}: {what} elements {rng[0]:,}–{rng[1] - 1:,} of {n:,}"
    return f"{name} {shape}: {n:,} {what} element{'s' if n != 1 else ''}"


class DimsRow(QWidget):
    """One spin box per dimension of a tensor: "all" or one index; labelled with the size."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.row = QHBoxLayout(self)
        self.row.setContentsMargins(0, 0, 0, 0)
        self.row.setSpacing(3)
        self.name = QLabel()
        self.name.setStyleSheet("font-weight: bold;")
        self.boxes: list[QSpinBox] = []
        self.shape: list[int] = []

    def set_tensor(self, name: str, shape: list[int], spec: Spec | None) -> None:
        while self.row.count():
            item = self.row.takeAt(0)
            w = item.widget() if item is not None else None
            if w is not None and w is not self.name:
                w.deleteLater()
        self.name.setText(name if len(name) <= 28 else "…" + name[-27:])
        self.name.setToolTip(name)
        self.row.addWidget(self.name)
        self.boxes, self.shape = [], list(shape)
        for d, n in enumerate(shape):
            label = QLabel(f"{n}:")
            label.setToolTip(f"dimension {d} of {name}: size {n}")
            label.setStyleSheet(f"color: {theme.LABEL_INK};")
            box = QSpinBox()
            box.setRange(-1, max(0, n - 1))
            box.setSpecialValueText("all")
            box.setToolTip(f"dimension {d} (size {n}): one index 0–{n - 1}, or all")
            e = spec[d] if spec is not None and d < len(spec) else None
            box.setValue(e if isinstance(e, int) else -1)
            box.valueChanged.connect(self.changed)
            self.row.addWidget(label)
            self.row.addWidget(box)
            self.boxes.append(box)
        if not shape:
            self.row.addWidget(QLabel("(a scalar)"))

    def spec(self) -> Spec | None:
        """One index or None (all) per dimension; None when every dimension is whole."""
        values = [b.value() for b in self.boxes]
        return [v if v >= 0 else None for v in values] if any(v >= 0 for v in values) else None


def _combo(tip: str, placeholder: str) -> QComboBox:
    c = QComboBox()
    c.setEditable(True)
    c.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
    c.setMinimumContentsLength(12)
    c.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    c.lineEdit().setPlaceholderText(placeholder)  # type: ignore[union-attr]  # editable: it has one
    c.setToolTip(tip)
    return c


class JacobianPanel(QWidget):
    computeRequested = Signal(str, str, str)  # of, wrt, via ("" = no split)
    cancelRequested = Signal()
    offerChosen = Signal(int)  # index into the last too_big error's offers
    opClicked = Signal(str)  # select this op in the graph
    exported = Signal(str, str)  # path, error ("" when written); from the export thread

    def __init__(self, parent=None):
        super().__init__(parent)
        self.shown: Jacobian | ChainSplit | None = None
        #: request name -> the name the fields show it by (:meth:`set_display_names`), and back
        self.shown_as: dict[str, str] = {}
        self._asked_as: dict[str, str] = {}
        self.offers: list[dict] = []
        self.of = _combo(
            "The output tensor: an op id of the graph (:k for its output k), or target", "target"
        )
        self.wrt = _combo(
            "The input: a variable (as in Variables) or an upstream tensor", "variable or tensor"
        )
        self.via = _combo(
            "Optional: a tensor between them, to split J(of, wrt) by the chain rule", "(no split)"
        )
        self.compute_btn = QPushButton("Compute")
        self.compute_btn.clicked.connect(self._compute)
        for c in (self.of, self.wrt, self.via):
            c.lineEdit().returnPressed.connect(self._compute)  # type: ignore[union-attr]  # editable
        self.log_box = QCheckBox("log |J|")
        self.log_box.setToolTip("Show log10 of the magnitude (exact zeros blank) instead of signed values")
        self.log_box.toggled.connect(self._set_log)
        self.export_btn = QToolButton()
        self.export_btn.setText("Export")
        self.export_btn.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.export_btn)
        for ext, what in ((".png", "PNG image…"), (".npy", "NumPy array (.npy)…"), (".csv", "CSV matrix…")):
            menu.addAction(what, lambda ext=ext: self.export_dialog(ext))  # type: ignore[misc]
        self.export_btn.setMenu(menu)
        self.export_btn.setEnabled(False)
        top = QHBoxLayout()
        top.setContentsMargins(6, 4, 6, 0)
        for w in (
            QLabel("∂"),
            self.of,
            QLabel("/ ∂"),
            self.wrt,
            QLabel("via"),
            self.via,
            self.compute_btn,
            self.log_box,
            self.export_btn,
        ):
            top.addWidget(w)
        top.setStretch(1, 2)
        top.setStretch(3, 2)
        top.setStretch(5, 1)

        self.of_dims, self.wrt_dims = DimsRow(), DimsRow()
        self.slice_size = QLabel()
        self.slice_size.setStyleSheet(f"color: {theme.LABEL_INK};")
        for d in (self.of_dims, self.wrt_dims):
            d.changed.connect(self._slice_changed)
        slices = QHBoxLayout()
        slices.setContentsMargins(6, 0, 6, 0)
        title = QLabel("Slice:")
        title.setToolTip(
            "Per dimension, one index or all. Press Compute to compute that slice;"
            " one batch element of the output only differentiates its own elements."
        )
        for piece in (title, QLabel("∂"), self.of_dims, QLabel("/ ∂"), self.wrt_dims, self.slice_size):
            slices.addWidget(piece)
        slices.addStretch(1)
        self.slice_row = QWidget()
        self.slice_row.setLayout(slices)
        self.slice_row.hide()
        self._dims_for: tuple[str, str] | None = None  # the request names the controls are for
        self._itemsize = 4

        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextFormat(Qt.TextFormat.RichText)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.message.linkActivated.connect(self._link)
        self.progress = QProgressBar()
        self.progress.setRange(0, 100)
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.clicked.connect(self.cancelRequested)
        prog = QHBoxLayout()
        prog.setContentsMargins(0, 0, 0, 0)
        prog.addWidget(self.progress, 1)
        prog.addWidget(self.cancel_btn)
        self.progress_row = QWidget()
        self.progress_row.setLayout(prog)
        self.progress_row.hide()

        self.empty = QLabel(EMPTY)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)
        self.empty.setStyleSheet(f"color: {theme.FAINT}; font-style: italic; padding: 24px;")
        self.single = Heatmap()
        self.single.hovered.connect(lambda r, c, v: self._hover(0, r, c, v))
        self.parts = [
            Heatmap(title=t, compact=True)
            for t in ("J(y,h)", "J(h,x)", "J(y,h) · J(h,x)", "J(y,x)", "difference")
        ]
        chain = QWidget()
        row = QHBoxLayout(chain)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(2)
        for k, h in enumerate(self.parts):
            h.hovered.connect(lambda r, c, v, k=k: self._hover(k + 1, r, c, v))
            row.addWidget(h)
        self.stack = QStackedWidget()
        for page in (self.empty, self.single, chain):
            self.stack.addWidget(page)
        self.readout = QLabel(" ")
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.readout.setStyleSheet("font-family: monospace; padding: 2px 6px;")

        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 2)
        lay.setSpacing(3)
        lay.addLayout(top)
        for part in (self.slice_row, self.message, self.progress_row):
            lay.addWidget(part)
        self.message.setContentsMargins(8, 0, 8, 0)
        lay.addWidget(self.stack, 1)
        lay.addWidget(self.readout)
        self.set_message("")
        self.exported.connect(self._exported)
        self.exporting: threading.Thread | None = None

    # -- requests -----------------------------------------------------------------
    def set_display_names(self, shown: dict[str, str]) -> None:
        """How a request name (an op's TensorFlow name, ``op:k``, a variable's) is shown:
        as the graph names it (``d_conv1 › BiasAdd``, not ``discriminator_1/d_conv1_1/BiasAdd``).
        The fields show these; what is asked of the worker stays the request name."""
        counts = Counter(shown.values())
        # a name two tensors would share is no name for either: those show their own
        self.shown_as = {k: v for k, v in shown.items() if v and v != k and counts[v] == 1}
        self._asked_as = {v: k for k, v in self.shown_as.items()}

    def shown_name(self, name: str) -> str:
        return self.shown_as.get(name, name)

    def _asked(self, text: str) -> str:
        return self._asked_as.get(text, text)

    def set_names(self, names: list[str]) -> None:
        for c in (self.of, self.wrt, self.via):
            text = c.currentText()
            c.blockSignals(True)
            c.clear()
            for name in ([""] if c is self.via else []) + names:
                c.addItem(self.shown_name(name), name)
                if self.shown_name(name) != name:
                    c.setItemData(c.count() - 1, name, Qt.ItemDataRole.ToolTipRole)
            c.setEditText(text)
            c.blockSignals(False)

    def set_request(self, of: str, wrt: str, via: str = "") -> None:
        for c, name in ((self.of, of or "target"), (self.wrt, wrt), (self.via, via or "")):
            c.setEditText(self.shown_name(name))
            c.setToolTip(name if self.shown_name(name) != name else "")

    def request(self) -> tuple[str, str, str]:
        """The request names of what the fields show (a name typed in is taken as it is)."""
        return (
            self._asked(self.of.currentText().strip()) or "target",
            self._asked(self.wrt.currentText().strip()),
            self._asked(self.via.currentText().strip()),
        )

    def set_dims(
        self,
        of_name: str,
        wrt_name: str,
        of_shape: list[int],
        wrt_shape: list[int],
        of_spec: Spec | None = None,
        wrt_spec: Spec | None = None,
        itemsize: int = 4,
    ) -> None:
        """Show one control per dimension of the two tensors (named as requested)."""
        if any(d < 0 for d in (*of_shape, *wrt_shape)):
            self.slice_row.hide()
            return
        self.of_dims.set_tensor(self.shown_name(of_name), of_shape, of_spec)
        self.wrt_dims.set_tensor(self.shown_name(wrt_name), wrt_shape, wrt_spec)
        self._dims_for, self._itemsize = (of_name, wrt_name), itemsize
        self.slice_row.show()
        self._slice_changed()

    def slices(self) -> tuple[Spec | None, Spec | None]:
        """The chosen slices, when the names above are still those the controls are for."""
        of, wrt, _via = self.request()
        if self._dims_for != (of, wrt) or not self.slice_row.isVisibleTo(self):
            return None, None
        return self.of_dims.spec(), self.wrt_dims.spec()

    def _slice_changed(self) -> None:
        n_out = int(np.prod(kept_shape(self.of_dims.spec(), self.of_dims.shape), dtype=np.int64))
        n_in = int(np.prod(kept_shape(self.wrt_dims.spec(), self.wrt_dims.shape), dtype=np.int64))
        self.slice_size.setText(f"→ {n_out:,} × {n_in:,} ({fmt_bytes(n_out * n_in * self._itemsize)})")

    def _compute(self) -> None:
        of, wrt, via = self.request()
        if not wrt:
            self.set_message("Name the input (∂ / ∂ <i>what</i>): a variable or an upstream tensor.")
            return
        self.computeRequested.emit(of, wrt, via)

    def computing(self, text: str) -> None:
        self.set_message(html.escape(text))
        self.progress.setValue(0)
        self.progress_row.show()
        self.cancel_btn.setEnabled(True)

    def set_progress(self, done: int, total: int) -> None:
        self.progress.setValue(int(100 * done / total) if total else 0)

    def idle(self) -> None:
        self.progress_row.hide()

    # -- answers ------------------------------------------------------------------
    def set_message(self, text: str, kind: str = "info") -> None:
        color = {"info": theme.INK, "error": theme.ERROR_INK, "ok": theme.OK_INK}[kind]
        self.message.setText(f"<span style='color:{color}'>{text}</span>" if text else "")
        self.message.setVisible(bool(text))

    def add_note(self, chosen: str) -> None:
        """Say, under the result's line, which slice a first look shows and how to pick
        others (:func:`app.jacobian.controller.structured_slice`)."""
        self.message.setText(
            self.message.text()
            + f"<br><i>Showing {html.escape(chosen)}: the whole Jacobian of a batch of feature maps"
            " is one block per example and channel. Pick others with the index boxes above the"
            " heatmap, or “:” for all of a dimension.</i>"
        )
        self.message.setVisible(True)

    def show_empty(self, text: str = EMPTY) -> None:
        self.shown = None
        self.empty.setText(text)
        self.stack.setCurrentWidget(self.empty)
        self.export_btn.setEnabled(False)

    def show_result(self, res: Jacobian | ChainSplit) -> None:
        self.idle()
        self.offers = []
        self.readout.setText(" ")
        if isinstance(res, ChainSplit):
            self._show_chain(res)
            return
        if res.status != "ok":
            self.show_empty(self._not_a_matrix(res))
            self.set_message(self._not_a_matrix(res, links=True), "error")
            return
        self.shown = res
        self.stack.setCurrentWidget(self.single)
        of, wrt, _via = self.request()
        if not (res.out_range or res.in_range):
            self.set_dims(
                of,
                wrt,
                res.of.shape,
                res.wrt.shape,
                res.out_index,
                res.in_index,
                saving.values_of(res).dtype.itemsize,
            )
        self._fill(self.single, res)
        a = saving.values_of(res)
        of_name, wrt_name = (html.escape(self.shown_name(t.name)) for t in (res.of, res.wrt))
        self.set_message(
            f"J({of_name}, {wrt_name}): shape "
            f"{tuple(a.shape)}, {res.mode} mode, {res.chunks} chunk"
            f"{'s' if res.chunks != 1 else ''}, {res.seconds:.2f} s. Largest |J| = "
            f"{self.single.scale:.4g}."
        )
        self.export_btn.setEnabled(True)

    def _show_chain(self, split: ChainSplit) -> None:
        parts = (split.j_yh, split.j_hx, split.j_yx)
        if any(j.status != "ok" for j in parts):
            self.show_empty(split.message)
            cut = next((j for j in parts if j.cut is not None), None)
            extra = f" {self._not_a_matrix(cut, links=True)}" if cut is not None else ""
            self.set_message(html.escape(split.message) + extra, "error")
            return
        self.shown = split
        self.slice_row.hide()
        self.stack.setCurrentIndex(2)
        y, h, x = split.j_yx.of, split.j_yh.wrt, split.j_yx.wrt
        short = lambda r: r.name if len(r.name) <= 14 else "…" + r.name[-13:]
        ys, hs, xs = short(y), short(h), short(x)
        titles = (
            f"J({ys}, {hs})",
            f"J({hs}, {xs})",
            f"J({ys}, {hs}) · J({hs}, {xs})",
            f"J({ys}, {xs})",
            "product − J: the difference",
        )
        assert split.product is not None  # a split without a message has its product
        product = Jacobian(y, x, values=split.product)
        # drawn on its own scale, so rounding shows
        diff = (split.product.to_numpy().astype(np.float64) - saving.values_of(split.j_yx)).astype(np.float32)
        diff_j = Jacobian(y, x, values=Array.holding(diff))
        for heat, j, t in zip(self.parts, (split.j_yh, split.j_hx, product, split.j_yx, diff_j), titles):
            heat.plot.setTitle(html.escape(t), size="10pt", color=theme.INK)
            self._fill(heat, j, short=True)
        diff = split.max_abs_diff if split.max_abs_diff is not None else float("nan")
        good = diff <= 1e-5 * max(1.0, self.parts[3].scale)
        self.set_message(
            f"<b>max |J({y.name},{h.name}) · J({h.name},{x.name}) − J({y.name},{x.name})| = {diff:.3g}</b>"
            f" ({'the chain rule holds' if good else 'they differ'}). "
            + html.escape(split.message.split(";", 1)[1].strip() if ";" in split.message else ""),
            "ok" if good else "error",
        )
        self.export_btn.setEnabled(True)

    def _fill(self, heat: Heatmap, j: Jacobian, short: bool = False) -> None:
        whole = lambda rng, spec, ref: None if rng else kept_shape(spec, ref.shape)
        heat.set_matrix(
            saving.matrix_of(j),
            whole(j.out_range, j.out_index, j.of),
            whole(j.in_range, j.in_index, j.wrt),
            log=self.log_box.isChecked(),
        )
        heat.jacobian = j
        # the tensors' flat index of each row and column (for the hover readout)
        heat.rows_flat = select(j.out_index, j.of.shape, "", "").flat if j.out_index else None
        heat.cols_flat = select(j.in_index, j.wrt.shape, "", "").flat if j.in_index else None
        if short:
            heat.set_labels(f"{j.of.name} {tuple(j.of.shape)}", f"{j.wrt.name} {tuple(j.wrt.shape)}")
        else:
            heat.set_labels(
                axis_label(j.of, j.out_range, "output", j.out_index),
                axis_label(j.wrt, j.in_range, "input", j.in_index),
            )

    def _not_a_matrix(self, j: Jacobian, links: bool = False) -> str:
        if j.cut is not None:
            op = html.escape(j.cut.op)
            where = f" ({os.path.basename(j.cut.file)}:{j.cut.line})" if j.cut.file and j.cut.line else ""
            shown = f"<a href='op:{op}'>{op}</a>" if links else op
            msg = html.escape(j.message) if links else j.message
            return f"{msg} The path is cut at {shown} ({html.escape(j.cut.op_type)}){where}."
        return html.escape(j.message) if links else j.message

    def show_error(self, err: dict) -> None:
        """A ``jacobian_error``: too big (with its slices), not found, not reachable, …"""
        self.idle()
        kind, msg = err.get("kind", ""), html.escape(err.get("message") or "the request failed")
        self.offers = list(err.get("offers") or []) if kind == "too_big" else []
        if kind == "cancelled":
            self.set_message("Cancelled.")
            return
        if kind == "too_big":
            of, wrt, _via = self.request()
            if err.get("of_shape") is not None and err.get("wrt_shape") is not None:
                spec_o, spec_i = self.slices()
                self.set_dims(of, wrt, err["of_shape"], err["wrt_shape"], spec_o, spec_i)
            links = [
                f"<a href='offer:{k}'>{html.escape(self._offer_text(o, of, wrt))}"
                f" ({fmt_bytes(int(o['bytes']))})</a>"
                for k, o in enumerate(self.offers)
            ]
            msg = (
                f"<b>Too big.</b> {msg}. Pick an index per dimension above, or compute a slice: "
                + " · ".join(links)
                if links
                else f"<b>Too big.</b> {msg}."
            )
        elif kind == "not_found" and err.get("candidates"):
            msg += ". Close matches: " + ", ".join(html.escape(c) for c in err["candidates"][:8])
        elif kind == "not_reachable" and err.get("op"):
            op = html.escape(err["op"])
            msg += f" (inside <a href='op:{op}'>{op}</a>)"
        self.set_message(msg, "error")

    @staticmethod
    def _offer_text(o: dict, of: str, wrt: str) -> str:
        short = lambda s: s if len(s) <= 24 else "…" + s[-23:]
        parts = []
        for key, name in (("of_index", of), ("wrt_index", wrt)):
            if o.get(key):
                parts.append(f"{short(name)}[{format_spec(o[key])}]")
        if o.get("out_range"):
            parts.append(
                f"outputs {o['out_range'][0]:,}–{o['out_range'][1] - 1:,}"
                f" × inputs {o['in_range'][0]:,}–{o['in_range'][1] - 1:,}"
            )
        return " × ".join(parts) if not o.get("out_range") else ", ".join(parts)

    def _link(self, href: str) -> None:
        kind, _, value = href.partition(":")
        if kind == "op":
            self.opClicked.emit(value)
        elif kind == "offer":
            self.offerChosen.emit(int(value))

    # -- view ---------------------------------------------------------------------
    def _set_log(self, on: bool) -> None:
        for h in (self.single, *self.parts):
            h.set_log(on)

    def _hover(self, which: int, r: int, c: int, v: float) -> None:
        heat = self.single if which == 0 else self.parts[which - 1]
        j = getattr(heat, "jacobian", None)
        if r < 0 or j is None:
            self.readout.setText(" ")
            return
        o = r + (j.out_range[0] if j.out_range else 0)
        i = c + (j.in_range[0] if j.in_range else 0)
        rows, cols = getattr(heat, "rows_flat", None), getattr(heat, "cols_flat", None)
        o = int(rows[o]) if rows is not None else o  # the tensor's flat index of a sliced row
        i = int(cols[i]) if cols is not None else i
        self.readout.setText(
            f"∂ {element(j.of, o)} / ∂ {element(j.wrt, i)} = {v:.6g}    (row {o:,}, column {i:,})"
        )

    def export_target(self) -> Jacobian | None:
        """What Export saves: the Jacobian shown (for a split, J(of, wrt), as the CLI does)."""
        return self.shown.j_yx if isinstance(self.shown, ChainSplit) else self.shown

    def export_dialog(self, ext: str) -> None:
        j = self.export_target()
        if j is None:
            return
        path, _ = QFileDialog.getSaveFileName(
            self, "Export the Jacobian", saving.default_name(j, ext), saving.FORMATS[ext]
        )
        if path:
            if not path.lower().endswith(ext):
                path += ext
            self.export_to(j, path)

    def export_to(self, j: Jacobian, path: str) -> None:
        """Write ``j`` on a thread (a 300 MB CSV takes most of a minute); ``exported`` says when."""
        self.set_message(f"Saving {html.escape(path)}…")
        self.export_btn.setEnabled(False)

        def work() -> None:
            try:
                saving.save(j, path)
                self.exported.emit(path, "")
            except (OSError, ValueError) as exc:
                self.exported.emit(path, str(exc) or type(exc).__name__)
            except Exception as exc:  # noqa: BLE001 - shown in the panel, the window lives on
                self.exported.emit(path, f"{type(exc).__name__}: {exc}")

        self.exporting = threading.Thread(target=work, name="tfviz-jacobian-export", daemon=True)
        self.exporting.start()

    def _exported(self, path: str, error: str) -> None:
        self.exporting = None
        self.export_btn.setEnabled(self.shown is not None)
        if error:
            self.set_message(f"Could not save: {html.escape(error)}", "error")
        else:
            self.set_message(f"Saved {html.escape(path)}.")
