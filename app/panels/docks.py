"""Details and Log panels, and the list base of Variables and Problems (all fed from a Report).

Every panel says what it will show while it is empty, so the start page and a
failed analysis never leave blank boxes. Paths are shown relative to the
script's folder (:mod:`app.display`); full paths only in tooltips.
"""

from __future__ import annotations

import html
import os
from collections import deque

from PySide6.QtCore import QRect, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QPainter, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QHeaderView, QPlainTextEdit, QTextBrowser, QTreeWidget

from tfviz.report import Report
from tfviz.structure.naming import function_title

from .. import theme
from ..display import norm_text, shape_text, source_location
from ..graph.palette import STYLES, category, look, text_color
from .layer_details import group_html

ROLE = Qt.ItemDataRole.UserRole
#: How the Details panel names an op's gradient status, where the kind alone says too little.
OP_STATUS_WORDS = {
    "zero": "zero — a warning: the gradient is exactly 0 at these values",
    "nan": "NaN/Inf at these values",
    "vanishing": "vanishing — a warning: the gradient arrives, over 5 decades smaller than near the loss",
    "exploding": "exploding — a warning: the gradient arrives, over 5 decades larger than near the loss",
    "starved": "none arrives here (cut further toward the target)",
    "not_trained": "not trained — the loss reads this variable, but the step never updates it",
}


def _base(report: Report | None) -> str | None:
    return os.path.dirname(report.script) if report and report.script else None


class Tree(QTreeWidget):
    """A flat list with a grey placeholder sentence while it has no rows."""

    def __init__(self, headers: list[str], placeholder: str, parent=None):
        super().__init__(parent)
        self.placeholder = placeholder
        self.setHeaderLabels(headers)
        self.setRootIsDecorated(False)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.header().setStretchLastSection(True)

    def clear(self) -> None:
        """Remove every row at once. ``QTreeWidget.clear()`` removes expanded rows one at a
        time, each updating the view's list of expanded rows: a grouped Variables panel of
        6,000 layers took 2.4 s to clear (and grew with the square of the rows), where taking
        the rows all at once takes 0.01 s."""
        self.invisibleRootItem().takeChildren()

    def paintEvent(self, e) -> None:  # noqa: N802 - Qt's name
        super().paintEvent(e)
        if self.topLevelItemCount() == 0 and self.placeholder:
            p = QPainter(self.viewport())
            p.setPen(QColor(theme.FAINT))
            f = p.font()
            f.setItalic(True)
            p.setFont(f)
            r = self.viewport().rect().adjusted(12, 10, -12, -10)
            p.drawText(
                QRect(r),
                Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextWordWrap,
                self.placeholder,
            )
            p.end()


EMPTY_DETAILS = f"<i style='color:{theme.MUTED}'>Select an op in the graph.</i>"


class DetailsPanel(QTextBrowser):
    """What one op is, what flows in and out, and why its gradient stops."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setHtml(
            f"<i style='color:{theme.MUTED}'>Open a script, then select an op in the graph to see"
            " its inputs, outputs and gradient status.</i>"
        )

    def show_op(self, report: Report | None, op_id: str, group_label: str = "", hierarchy=None) -> None:
        """Describe op ``op_id``; a group id (with the view's ``hierarchy``) gets the
        group's attributes: type, variables, inputs and outputs, problems inside."""
        if report is None or not op_id:
            self.setHtml(EMPTY_DETAILS)
            return
        ops = {o.id: o for o in report.graph.ops}
        op = ops.get(op_id)
        esc = html.escape
        if op is None:
            if hierarchy is not None and op_id in hierarchy.groups:
                self.setToolTip("")
                self.setHtml(group_html(report, hierarchy, op_id))
                return
            self.setHtml(f"<b>{esc(group_label or op_id)}</b><br>A group; double-click it to expand.")
            return
        cat = category(op.status)
        st, color = STYLES[cat], text_color(cat)
        # the name the graph, Problems and Search give it; TensorFlow's beside it, smaller
        name = hierarchy.display_name(op_id) if hierarchy is not None else op.name
        h = [f"<h3 style='margin:0'>{esc(name)}</h3><b>{esc(op.type)}</b>"]
        if name != op.name:
            h.append(f" <small style='color:{theme.MUTED}'>· TensorFlow: {esc(op.name)}</small>")
        if hierarchy is not None:
            # the boxes that hold it, outermost first, as the graph titles them
            held = [hierarchy.groups[g] for g in hierarchy.chain.get(hierarchy.alias.get(op_id, op_id), [])]
            boxes = [g for g in held if g.kind != "root"]
            if boxes:
                # a function's box says what it is itself: "contraction_step (tf.function) at x.py:58"
                what = "layer" if boxes[-1].kind == "layer" else ""
                path = " › ".join(esc(g.label) for g in boxes)
                h.append(f"<br><small>in {what + ' ' if what else ''}{path}</small>")
            else:
                h.append("<br><small>at the top level of the graph</small>")
        elif op.group or op.scope:
            fn = next((f for f in report.graph.functions if f.id == op.group), None)
            where = function_title(fn, ops.get(fn.call_op)) if fn else "top level"  # as its group box
            h.append(f"<br><small>in {esc(where)} {esc(op.scope)}</small>")
        status = OP_STATUS_WORDS.get(op.status, op.status)
        mark = "" if st.marker.isdigit() else st.marker  # "0 zero" would say it twice
        h.append(
            f"<p>Gradient: <span style='color:{color}'><b>{mark} {status}</b></span>"
            f" · on a variable→target path: {'yes' if op.on_path else 'no'}"
            f" · grad norm: {norm_text(op.grad_norm)}</p>"
        )
        if op.message:
            h.append(f"<p style='color:{color}'>{esc(op.message)}</p>")
        if op.source:
            loc = source_location(op.source, _base(report))
            h.append(f"<p><code>{esc(loc)}</code><br><code>{esc(op.source.code)}</code></p>")
            self.setToolTip(f"{op.source.file}:{op.source.line}")
        else:
            self.setToolTip("")
        ins = sorted((e for e in report.graph.edges if e.dst == op_id), key=lambda e: e.dst_input)
        if ins:
            h.append("<b>Inputs</b><table cellspacing=4>")
            for e in ins:
                src = ops.get(e.src)
                ecat = category(look(e))
                est = STYLES[ecat]
                word = e.status
                if ecat == "starved":
                    cut = ops.get(e.cut_at)
                    cut_name = (
                        hierarchy.display_name(e.cut_at)
                        if hierarchy is not None and cut
                        else (cut.name if cut else e.cut_at)
                    )
                    word = f"no gradient: cut at {cut.type if cut else ''} {cut_name}"
                elif ecat == "muted":
                    word = f"{e.status} (no variable needs this cut)"
                src_name = (
                    hierarchy.display_name(e.src) if hierarchy is not None else (src.name if src else e.src)
                )
                h.append(
                    f"<tr><td>{e.dst_input}</td><td>{esc(src_name)}</td>"
                    f"<td>{e.dtype}{shape_text(e.shape)}</td>"
                    f"<td style='color:{text_color(ecat)}'>{est.marker} {esc(word)}</td>"
                    f"<td>{norm_text(e.grad_norm)}</td></tr>"
                )
            h.append("</table>")
        if op.outputs:
            h.append("<b>Outputs</b><table cellspacing=4>")
            for i, t in enumerate(op.outputs):
                h.append(f"<tr><td>{i}</td><td>{t.dtype}{shape_text(t.shape)}</td></tr>")
            h.append("</table>")
        self.setHtml("".join(h))


class LogPanel(QPlainTextEdit):
    """What the script prints, as it runs, and tfviz's own notes (bold blue).

    Text arrives in chunks of up to 64 KB (the worker batches it) and is
    queued; a timer inserts at most :data:`BUDGET` characters per turn of the
    event loop, whole chunks at a time, with no per-line work in Python. The
    panel keeps the last :data:`MAX_LINES` lines: older ones are removed in
    one cut (Qt's own maximum block count removes them one at a time, which
    costs more than inserting them), and queued text that would only be cut
    again is dropped before it is drawn. The view follows the output only
    while it is at the bottom, so scrolling up to read stays put.
    """

    MAX_LINES = 20000
    #: Characters inserted per timer turn: a few milliseconds of work.
    BUDGET = 128 * 1024

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setFont(QFont("Monospace", 9))
        self.setUndoRedoEnabled(False)
        self.setPlaceholderText("What the script prints while it is analyzed appears here.")
        self._formats: dict[tuple[str, bool, str | None], QTextCharFormat] = {}
        self._queue: deque[tuple[tuple[str, bool, str | None], str]] = deque()
        self._queued_lines = 0
        self._skipped = False  # the oldest lines were dropped: say so at the top
        self._line_start = True  # the text so far ends with a newline
        self._timer = QTimer(self, singleShot=True, interval=10)
        self._timer.timeout.connect(self._drain)

    def append_text(self, stream: str, text: str, *, bold: bool = False, color: str | None = None) -> None:
        if not text:
            return
        self._queue.append(((stream, bold, color), text))
        self._queued_lines += text.count("\n")
        self._line_start = text.endswith("\n")
        if self._queued_lines > self.MAX_LINES:
            self._drop_old()
        if not self._timer.isActive():
            self._timer.start()

    def note(self, text: str) -> None:
        """A line of tfviz's own (what runs, how it ended), set apart from the program's output."""
        self.append_text(
            "stdout", ("" if self._line_start else "\n") + f"── {text}\n", bold=True, color=theme.ACCENT
        )

    def toPlainText(self) -> str:  # noqa: N802 - Qt's name
        """Everything appended so far, including what is still queued."""
        self.flush()
        return super().toPlainText()

    def flush(self) -> None:
        while self._queue or self._skipped:
            self._drain(budget=1 << 62)

    def clear(self) -> None:
        self._queue.clear()
        self._queued_lines, self._skipped = 0, False
        self._line_start = True
        super().clear()

    # -- internals ----------------------------------------------------------------
    def _format(self, key: tuple[str, bool, str | None]) -> QTextCharFormat:
        fmt = self._formats.get(key)
        if fmt is None:
            stream, bold, color = key
            fmt = self._formats[key] = QTextCharFormat()
            fmt.setForeground(QColor(color or (theme.STDERR_INK if stream == "stderr" else theme.INK_STRONG)))
            fmt.setFontWeight(QFont.Weight.Bold if bold else QFont.Weight.Normal)
        return fmt

    def _drop_old(self) -> None:
        """The queue alone fills the panel: what is shown now, and the queue's oldest
        lines, would all be cut once it is drawn, so drop them now."""
        excess = self._queued_lines - self.MAX_LINES
        while excess > 0 and self._queue:
            key, text = self._queue[0]
            n = text.count("\n")
            if n <= excess:
                self._queue.popleft()
                cut = n
            else:
                self._queue[0] = (key, text.split("\n", excess)[-1])
                cut = excess
            excess -= cut
            self._queued_lines -= cut
        self._skipped = True
        self.setPlainText("")

    def _drain(self, budget: int | None = None) -> None:
        budget = budget or self.BUDGET
        bar = self.verticalScrollBar()
        follow = bar.value() >= bar.maximum() - 2
        cur = QTextCursor(self.document())
        cur.movePosition(QTextCursor.MoveOperation.End)
        used = 0
        while self._queue and used < budget:
            key, text = self._queue[0]
            room = budget - used
            if len(text) > room:
                cut = text.rfind("\n", 0, room) + 1 or room  # whole lines where there are some
                text, rest = text[:cut], text[cut:]
                self._queue[0] = (key, rest)
            else:
                self._queue.popleft()
            self._queued_lines -= text.count("\n")
            cur.insertText(text, self._format(key))
            used += len(text)
        doc = self.document()
        if doc.blockCount() > self.MAX_LINES + self.MAX_LINES // 10:
            trim = QTextCursor(doc)
            trim.setPosition(
                doc.findBlockByNumber(doc.blockCount() - self.MAX_LINES).position(),
                QTextCursor.MoveMode.KeepAnchor,
            )
            trim.removeSelectedText()
            self._skipped = True
        if self._skipped:
            top = QTextCursor(doc)
            top.insertText(
                f"── earlier output not kept: the Log keeps the last {self.MAX_LINES:,} lines\n",
                self._format(("stdout", True, theme.ACCENT)),
            )
            self._skipped = False
        if follow:
            bar.setValue(bar.maximum())
        if self._queue:
            self._timer.start()
