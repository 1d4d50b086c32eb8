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

from .. import theme

#: How strongly stale panels are turned grey (1: no colour left).
OPACITY = 0.85
STALE_NOTE = ("<i>The graph and lists below are from the previous analysis ({what}) and are out of date;"
              " they are greyed until an analysis succeeds.</i>")


def _panels(window) -> list[QWidget]:
    out = [window.graph.view, window.variables.box, window.problems]
    flow = getattr(window, "flow", None)
    if isinstance(flow, QWidget):
        out.append(flow)
    elif flow is not None and isinstance(getattr(flow, "widget", None), QWidget):
        out.append(flow.widget)
    return out


def mark_stale(window, on: bool) -> None:
    """Grey the panels (``on``) or draw them normally again; say so in the banner."""
    on = bool(on and window.report is not None)
    window.stale = on
    for w in _panels(window):
        if on:
            eff = QGraphicsColorizeEffect(w)
            eff.setColor(QColor(theme.STALE))
            eff.setStrength(OPACITY)
            w.setGraphicsEffect(eff)
        elif isinstance(w.graphicsEffect(), QGraphicsColorizeEffect):
            w.setGraphicsEffect(None)  # type: ignore[arg-type]  # None removes it (Qt's null pointer)
        w.setToolTip("Out of date: from the previous analysis, which the last one failed to replace"
                     if on else "")
    if on:
        r = window.report
        what = f"{r.target}()" if r.mode == "target" else f"program: {r.target}"
        note = STALE_NOTE.format(what=html.escape(what))
        title = window.banner.title
        if note not in title.text():
            title.setText(title.text() + "<br>" + note)
        window.banner.show()
