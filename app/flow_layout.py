"""A layout that wraps its items onto new rows, like words in a paragraph.

The legend and the graph toolbar use it so the window can shrink to a laptop
screen (1280 px) without anything being cut off: items move to a second row
instead of forcing a minimum width.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QSizePolicy, QWidgetItem


class FlowLayout(QLayout):
    def __init__(self, parent=None, spacing: int = 6, row_spacing: int = 2):
        super().__init__(parent)
        self._items: list[QWidgetItem] = []
        self._h, self._v = spacing, row_spacing
        self._stretch: set[int] = set()  # indices of items that take the rest of their row

    def addItem(self, item) -> None:  # noqa: N802 - Qt override
        self._items.append(item)

    def add_stretching(self, w) -> None:
        """Add a widget that grows to fill its row (e.g. a search field)."""
        self.addWidget(w)
        self._stretch.add(len(self._items) - 1)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, i: int):  # noqa: N802
        return self._items[i] if 0 <= i < len(self._items) else None

    def takeAt(self, i: int):  # noqa: N802
        return self._items.pop(i) if 0 <= i < len(self._items) else None

    def expandingDirections(self):  # noqa: N802
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        return self._do_layout(QRect(0, 0, width, 0), apply=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802
        super().setGeometry(rect)
        self._do_layout(rect, apply=True)

    def sizeHint(self) -> QSize:  # noqa: N802
        return self.minimumSize()

    def minimumSize(self) -> QSize:  # noqa: N802
        size = QSize()
        for it in self._items:
            size = size.expandedTo(it.minimumSize())
        m = self.contentsMargins()
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    def _do_layout(self, rect: QRect, apply: bool) -> int:
        m = self.contentsMargins()
        r = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        rows: list[list[int]] = [[]]
        x = 0
        for i, it in enumerate(self._items):
            if it.isEmpty():  # a hidden widget takes no room
                continue
            w = it.sizeHint().width() if i not in self._stretch else max(it.minimumSize().width(), 160)
            if rows[-1] and x + w > r.width():
                rows.append([])
                x = 0
            rows[-1].append(i)
            x += w + self._h
        y = r.y()
        for row in rows:
            hints = {i: self._items[i].sizeHint() for i in row}
            used = sum(hints[i].width() for i in row if i not in self._stretch) + self._h * (len(row) - 1)
            stretchers = [i for i in row if i in self._stretch]
            spare = max(0, r.width() - used)
            line_h = max((h.height() for h in hints.values()), default=0)
            x = r.x()
            for i in row:
                w = spare // len(stretchers) if i in self._stretch else hints[i].width()
                if i in self._stretch:
                    w = max(w, self._items[i].minimumSize().width())
                if apply:
                    h = hints[i].height()
                    self._items[i].setGeometry(QRect(QPoint(x, y + (line_h - h) // 2), QSize(w, h)))
                x += w + self._h
            y += line_h + self._v
        return y - self._v - rect.y() + m.bottom()


def fixed(widget):
    """Give ``widget`` its preferred size in a flow layout (no stretching)."""
    widget.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
    return widget
