"""Variables, Problems, Details and Log panels (all fed from a Report)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QTextCursor
from PySide6.QtWidgets import QHeaderView, QPlainTextEdit, QTextBrowser, QTreeWidget, QTreeWidgetItem

from tfviz.report import Report

from .palette import STATUS_ICON_COLOR, STYLES, category

ROLE = Qt.UserRole


def _shape(s) -> str:
    return "?" if s is None else "(" + ", ".join("?" if d is None else str(d) for d in s) + ")"


def _norm(g) -> str:
    return "—" if g is None else f"{g:.3g}"


class _Tree(QTreeWidget):
    def __init__(self, headers: list[str], parent=None):
        super().__init__(parent)
        self.setHeaderLabels(headers)
        self.setRootIsDecorated(False)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.header().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.header().setStretchLastSection(True)


class VariablesPanel(_Tree):
    """One row per trainable variable; the dot and text say connected/disconnected/broken."""

    variableSelected = Signal(object)  # VariableReport or None

    def __init__(self, parent=None):
        super().__init__(["", "variable", "status", "shape", "grad norm"], parent)
        self.itemSelectionChanged.connect(
            lambda: self.variableSelected.emit(self.currentItem().data(0, ROLE) if self.selectedItems()
                                               else None))

    def set_report(self, report: Report | None) -> None:
        self.clear()
        for v in report.variables if report else []:
            status = v.status + (f" ({v.kind})" if v.kind else "")
            it = QTreeWidgetItem(["●", v.name, status, _shape(v.shape), _norm(v.grad_norm)])
            it.setForeground(0, QBrush(QColor(STATUS_ICON_COLOR.get(v.status, "#777"))))
            it.setToolTip(1, v.explanation or v.tf_name)
            it.setToolTip(2, v.explanation)
            it.setData(0, ROLE, v)
            self.addTopLevelItem(it)

    def select_name(self, name: str) -> bool:
        for i in range(self.topLevelItemCount()):
            it = self.topLevelItem(i)
            if it.data(0, ROLE).name == name:
                self.setCurrentItem(it)
                return True
        return False


class ProblemsPanel(_Tree):
    problemActivated = Signal(object)  # Problem

    def __init__(self, parent=None):
        super().__init__(["kind", "op", "message", "where"], parent)
        self.itemActivated.connect(lambda it, _c: self.problemActivated.emit(it.data(0, ROLE)))
        self.itemClicked.connect(lambda it, _c: self.problemActivated.emit(it.data(0, ROLE)))

    def set_report(self, report: Report | None) -> None:
        self.clear()
        for p in report.problems if report else []:
            where = f"{p.source.file.rsplit('/', 1)[-1]}:{p.source.line}" if p.source else ""
            st = STYLES[category(p.kind)]
            it = QTreeWidgetItem([f"{st.marker} {p.kind}", f"{p.op_type} {p.op.rsplit('/', 1)[-1]}".strip(),
                                  p.message, where])
            it.setForeground(0, QBrush(QColor(st.color)))
            if p.severity == "error":
                f = QFont()
                f.setBold(True)
                it.setFont(0, f)
            it.setToolTip(2, p.message + (f"\nHint: {p.hint}" if p.hint else ""))
            it.setData(0, ROLE, p)
            self.addTopLevelItem(it)


class DetailsPanel(QTextBrowser):
    """What one op is, what flows in and out, and why its gradient stops."""

    def show_op(self, report: Report | None, op_id: str, group_label: str = "") -> None:
        if report is None or not op_id:
            self.setHtml("<i>Select an op in the graph.</i>")
            return
        ops = {o.id: o for o in report.graph.ops}
        op = ops.get(op_id)
        if op is None:
            self.setHtml(f"<b>{group_label or op_id}</b><br>A group; double-click it to expand.")
            return
        st = STYLES[category(op.status)]
        h = [f"<h3 style='margin:0'>{op.name}</h3><b>{op.type}</b>"]
        if op.group or op.scope:
            h.append(f"<br><small>in {op.group or 'top level'} {op.scope}</small>")
        h.append(f"<p>Gradient: <span style='color:{st.color}'><b>{op.status}</b></span>"
                 f" · on a variable→target path: {'yes' if op.on_path else 'no'}"
                 f" · grad norm: {_norm(op.grad_norm)}</p>")
        if op.message:
            h.append(f"<p style='color:{st.color}'>{op.message}</p>")
        if op.source:
            h.append(f"<p><code>{op.source.label()}</code><br><code>{op.source.code}</code></p>")
        ins = sorted((e for e in report.graph.edges if e.dst == op_id), key=lambda e: e.dst_input)
        if ins:
            h.append("<b>Inputs</b><table cellspacing=4>")
            for e in ins:
                src = ops.get(e.src)
                est = STYLES[category(e.status)]
                h.append(f"<tr><td>{e.dst_input}</td><td>{src.name if src else e.src}</td>"
                         f"<td>{e.dtype}{_shape(e.shape)}</td>"
                         f"<td style='color:{est.color}'>{est.marker} {e.status}</td>"
                         f"<td>{_norm(e.grad_norm)}</td></tr>")
            h.append("</table>")
        if op.outputs:
            h.append("<b>Outputs</b><table cellspacing=4>")
            for i, t in enumerate(op.outputs):
                h.append(f"<tr><td>{i}</td><td>{t.dtype}{_shape(t.shape)}</td></tr>")
            h.append("</table>")
        self.setHtml("".join(h))


class LogPanel(QPlainTextEdit):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setFont(QFont("Monospace", 9))
        self.setMaximumBlockCount(20000)

    def append_text(self, stream: str, text: str) -> None:
        cur = self.textCursor()
        cur.movePosition(QTextCursor.End)
        fmt = cur.charFormat()
        fmt.setForeground(QColor("#B00020") if stream == "stderr" else QColor("#202020"))
        cur.setCharFormat(fmt)
        cur.insertText(text)
        self.setTextCursor(cur)
        self.ensureCursorVisible()
