"""Stale results: a failed analysis greys the previous one's panels instead of leaving
them shown as current.

When an analysis fails while an earlier report is still on screen (the user picked
another target, edited the script, changed the arguments), the graph, Variables,
Problems and the gradient-flow chart are drawn in grey, and the error
banner gets a line that says what they still show. The next result clears it.
"""

from __future__ import annotations

import html

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGraphicsColorizeEffect, QWidget

from tfviz.report import Report

from .. import theme
from ..banner import ErrorBanner

#: How strongly stale panels are turned grey (1: no colour left).
OPACITY = 0.85
STALE_NOTE = (
    "<i>The graph and lists below are from the previous analysis ({what}) and are out of date;"
    " they are greyed until an analysis succeeds.</i>"
)


class StaleMarker:
    """Greys ``panels`` while what they show is out of date, and says so in ``banner``."""

    def __init__(self, panels: list[QWidget], banner: ErrorBanner) -> None:
        self.panels, self.banner = panels, banner
        self.on = False

    def mark(self, report: Report | None, on: bool) -> None:
        """Grey the panels (``on``, when they show a ``report``) or draw them normally again."""
        on = self.on = bool(on and report is not None)
        for w in self.panels:
            if on:
                eff = QGraphicsColorizeEffect(w)
                eff.setColor(QColor(theme.STALE))
                eff.setStrength(OPACITY)
                w.setGraphicsEffect(eff)
            elif isinstance(w.graphicsEffect(), QGraphicsColorizeEffect):
                w.setGraphicsEffect(None)  # type: ignore[arg-type]  # None removes it (Qt's null pointer)
            w.setToolTip(
                "Out of date: from the previous analysis, which the last one failed to replace" if on else ""
            )
        if on and report is not None:
            what = f"{report.target}()" if report.mode == "target" else f"program: {report.target}"
            note = STALE_NOTE.format(what=html.escape(what))
            title = self.banner.title
            if note not in title.text():
                title.setText(title.text() + "<br>" + note)
            self.banner.show()
