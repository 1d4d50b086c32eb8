"""File > Export image… (Ctrl+E): the graph as PNG, SVG or PDF, whole or the visible area.

The dialog previews the size as the choices change ("4 210 × 2 980 px, 12.5 MP") and,
past the PNG pixel cap, says so, offers the largest scale that fits and disables the
export rather than write a clipped file. It draws through :func:`app.graph.export.image.write_image`
from the view's own scene, in the current collapse state, path view and colours.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from PySide6.QtCore import QObject, QRectF
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QRadioButton,
    QWidget,
)

from ... import theme
from ..view import GraphView
from .image import (
    PIXEL_CAP,
    ExportError,
    check_pixels,
    max_scale,
    plan,
    size_text,
    write_image,
)

FILTERS = {"png": "PNG image (*.png)", "svg": "SVG drawing (*.svg)", "pdf": "PDF document (*.pdf)"}


def visible_rect(view: GraphView) -> QRectF:
    """The part of the scene the view shows now."""
    return view.mapToScene(view.viewport().rect()).boundingRect()


class ExportDialog(QDialog):
    """Format, area and PNG scale, with a live size preview; :meth:`write` does the work."""

    #: the size preview; it hides QWidget.size() on the dialog (tests read ``dlg.size``)
    size: QLabel  # type: ignore[assignment]

    def __init__(self, view: GraphView, parent=None, stem: str = "graph", folder: str = ""):
        super().__init__(parent)
        self.setWindowTitle("Export image")
        self.setMinimumWidth(460)  # the pixel-cap warning wraps onto a few readable lines
        self.view, self.stem, self.folder = view, stem, folder or os.getcwd()
        self.message = ""  # what the status bar says once the dialog is done
        self.cap = PIXEL_CAP
        self.fmt = QComboBox()
        for key in FILTERS:
            self.fmt.addItem(key.upper(), key)
        self.whole = QRadioButton("Whole graph")
        self.visible = QRadioButton("Visible area")
        self.whole.setChecked(True)
        area = QButtonGroup(self)
        area.addButton(self.whole)
        area.addButton(self.visible)
        areas = QWidget()
        row = QHBoxLayout(areas)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.whole)
        row.addWidget(self.visible)
        row.addStretch(1)
        self.scale = QDoubleSpinBox()
        self.scale.setRange(0.05, 8.0)
        self.scale.setSingleStep(0.25)
        self.scale.setDecimals(2)
        self.scale.setValue(1.0)
        self.scale.setToolTip("Pixels per graph unit: 1 draws the graph at 100 % zoom, 2 for print")
        self.size = QLabel()
        self.warning = QLabel()
        self.warning.setWordWrap(True)
        self.warning.setStyleSheet(f"color: {theme.WARNING_INK};")
        self.fit = QPushButton("Use the largest scale that fits")
        self.fit.clicked.connect(self._fit)
        form = QFormLayout(self)
        form.addRow("Format:", self.fmt)
        form.addRow("Area:", areas)
        form.addRow("PNG scale:", self.scale)
        form.addRow("Size:", self.size)
        form.addRow(self.warning)
        form.addRow(self.fit)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.export_button = self.buttons.addButton("Export…", QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self.choose_and_write)
        self.buttons.rejected.connect(self.reject)
        form.addRow(self.buttons)
        for signal in (self.fmt.currentIndexChanged, self.whole.toggled, self.scale.valueChanged):
            signal.connect(self.refresh)
        self.refresh()

    def format(self) -> str:
        return self.fmt.currentData()

    def source(self) -> QRectF | None:
        return visible_rect(self.view) if self.visible.isChecked() else None

    def refresh(self) -> None:
        """Update the size preview and the pixel-cap warning for the current choices; the
        dialog grows to show the whole warning, and shrinks back without it."""
        self._refresh()
        self.layout().activate()  # type: ignore[union-attr]  # the form made in __init__
        self.adjustSize()

    def _refresh(self) -> None:
        png = self.format() == "png"
        self.scale.setEnabled(png)
        self.warning.setText("")
        self.fit.hide()
        try:
            page = plan(self.view.scene(), self.source())
        except ExportError as exc:
            self.size.setText("")
            self.warning.setText(str(exc))
            self.export_button.setEnabled(False)
            return
        if not png:
            self.size.setText(f"{page.width:.0f} × {page.height:.0f} (vector: any zoom, text stays text)")
            self.export_button.setEnabled(True)
            return
        w, h = page.pixels(self.scale.value())
        self.size.setText(size_text(w, h))
        try:
            check_pixels(page, self.scale.value(), self.cap)
        except ExportError as exc:
            self.warning.setText(str(exc))
            self.fit.setVisible(max_scale(page, self.cap) >= self.scale.minimum())
            self.export_button.setEnabled(False)
            return
        self.export_button.setEnabled(True)

    def _fit(self) -> None:
        page = plan(self.view.scene(), self.source())
        self.scale.setValue(max_scale(page, self.cap))

    def choose_and_write(self) -> None:
        fmt = self.format()
        start = os.path.join(self.folder, f"{self.stem}.{fmt}")
        path, _ = QFileDialog.getSaveFileName(self, "Export image", start, FILTERS[fmt])
        if not path:
            return
        if not path.lower().endswith(f".{fmt}"):
            path += f".{fmt}"
        if self.write(path) is None:
            self.accept()

    def write(self, path: str) -> str | None:
        """Write the image to ``path``; the error in words (also shown), or None."""
        fmt = self.format()
        try:
            page = write_image(
                self.view.scene(), path, fmt, scale=self.scale.value(), source=self.source(), cap=self.cap
            )
        except ExportError as exc:
            self.warning.setText(str(exc))
            self.message = f"Could not export the image: {exc}"
            return str(exc)
        area = "the visible area" if self.visible.isChecked() else "the graph"
        size = size_text(*page.pixels(self.scale.value())) if fmt == "png" else fmt.upper()
        self.message = f"Exported {area} to {path} ({size})"
        self.folder = os.path.dirname(path)
        return None


class ImageExport(QObject):
    """File > Export image… (Ctrl+E) for ``view``: an action, enabled while the view shows a
    graph, that opens the dialog; ``say`` puts its outcome in the status bar, ``folder``
    names where the file dialog starts."""

    def __init__(
        self, view: GraphView, parent: QWidget, say: Callable[[str], None], folder: Callable[[], str]
    ) -> None:
        super().__init__(parent)
        self.view, self.say, self.folder, self.owner = view, say, folder, parent
        self.dialog: ExportDialog | None = None  # the last one opened
        a = self.action = QAction("&Export image…", parent)
        a.setShortcut(QKeySequence("Ctrl+E"))
        a.setStatusTip("Write the graph, or the visible area, as PNG, SVG or PDF with its legend")
        a.triggered.connect(self.open_dialog)
        view.scene().graphChanged.connect(self.follow)
        self.follow()

    def follow(self) -> None:
        self.action.setEnabled(self.view.hierarchy is not None)

    def open_dialog(self) -> ExportDialog | None:
        """Open the Export image dialog on the graph (non-blocking); None when there is no graph."""
        view = self.view
        if view.hierarchy is None:
            self.say("Nothing to export yet: analyze a script or open a saved analysis first")
            return None
        report = view.report
        stem = os.path.splitext(os.path.basename(report.script or "graph"))[0] if report else "graph"
        dlg = ExportDialog(view, self.owner, stem=stem, folder=self.folder())
        dlg.finished.connect(lambda result: self.say(dlg.message) if result else None)
        self.dialog = dlg
        dlg.open()
        return dlg
