"""A layout change drawn without holding up the window: placed on a thread, drawn a step
at a time between events.

Expanding every group of a ResNet50 took a third of a second on the GUI thread, and a
graph of 100,000 ops a minute; every paint, click and key waited for it. Here the
placement, plain Python data (:meth:`GraphScene.place
<app.graph.scene.GraphScene.place>`), is computed on a thread of its own, and the scene's
items are then made a few milliseconds at a time between events (:meth:`GraphScene.drawing
<app.graph.scene.GraphScene.drawing>`), so the graph shows as it is made. Starting another
build drops the one in flight: its placement, still running, is left to finish unseen.

Python's cycle collector is off while any placement runs (:class:`_Collector`): a
collection runs in whichever thread happens to allocate, and one on the placement's thread
would free the window's garbage Qt objects (a closed view, its scene and items) there,
away from the GUI thread, which crashes Qt.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication, QObject, QTimer, Signal

from tfviz.report import collector_paused

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .layout.placement import Scene
    from .scene import GraphScene

#: how often the placement thread is asked whether it is done
POLL_MS = 5
#: the GUI thread's time per turn of the event loop while the items are made
BUDGET_S = 0.015


class _Collector(QObject):
    """Keeps Python's cycle collector off from the first placement thread's start until
    the last has ended, as the GUI thread sees them end (one timer for the application,
    so a placement dropped by a view since closed is still waited for)."""

    def __init__(self) -> None:
        super().__init__(QCoreApplication.instance())
        self._running: list[_Placement] = []
        self._turned_off = False
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._reap)

    def started(self, placement: _Placement) -> None:
        if not self._running and gc.isenabled():
            gc.disable()
            self._turned_off = True
        self._running.append(placement)
        if not self._timer.isActive():
            self._timer.start(POLL_MS)

    def _reap(self) -> None:
        self._running = [p for p in self._running if not p.done.is_set()]
        if self._running:
            return
        self._timer.stop()
        if self._turned_off:
            self._turned_off = False
            gc.enable()


_collector: _Collector | None = None


def _collector_off_for(placement: _Placement) -> None:
    global _collector
    if _collector is None:
        _collector = _Collector()
    _collector.started(placement)


class _Placement:
    """One placement, computed on a daemon thread (a window closed meanwhile does not wait
    for it): its result or its exception, once ``done``. Started on the GUI thread, with the
    cycle collector off until it has ended (:class:`_Collector`)."""

    def __init__(self, place: Callable[[], Scene | None]) -> None:
        self.done = threading.Event()
        self.result: Scene | None = None
        self.error: BaseException | None = None

        def run() -> None:
            try:
                self.result = place()
            except BaseException as exc:  # noqa: BLE001 - raised again on the GUI thread
                self.error = exc
            finally:
                self.done.set()

        _collector_off_for(self)
        threading.Thread(target=run, name="tfviz-layout", daemon=True).start()


class BackgroundBuild(QObject):
    """Builds ``scene`` for its current collapse state off the event loop's critical path;
    ``then`` runs once the scene is complete."""

    finished = Signal()

    def __init__(self, scene: GraphScene, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._scene = scene
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._step)
        self._placement: _Placement | None = None
        self._steps: Iterator[None] | None = None
        self._then: Callable[[], Any] | None = None
        self._gl: object = None

    def busy(self) -> bool:
        return self._placement is not None or self._steps is not None

    def start(self, then: Callable[[], Any]) -> None:
        """Place on a thread, then draw step by step, then ``then()``."""
        self.stop()
        sc = self._scene
        gl, expanded, only_path = sc.gl, set(sc.expanded), sc.only_path  # as they are now
        if gl is None or sc.hierarchy is None:
            sc.build()
            then()
            return
        self._gl, self._then = gl, then
        self._placement = _Placement(lambda: gl.place(expanded, only_path))
        self._timer.start(POLL_MS)

    def stop(self) -> None:
        """Drop the build in flight (a new one, or a build on the GUI thread, replaces it)."""
        self._timer.stop()
        self._placement, self._steps, self._then = None, None, None

    def _step(self) -> None:
        if self._placement is not None:
            if not self._placement.done.is_set():
                return
            placement, self._placement = self._placement, None
            if placement.error is not None:
                self.stop()
                raise placement.error
            if self._gl is not self._scene.gl or placement.result is None:  # another report now
                self.stop()
                return
            self._steps = self._scene.drawing(placement.result)
            self._timer.setInterval(0)
        if self._steps is None:
            return
        deadline = time.perf_counter() + BUDGET_S
        with collector_paused():
            while time.perf_counter() < deadline:
                try:
                    next(self._steps)
                except StopIteration:
                    then = self._then
                    self.stop()
                    if then is not None:
                        then()
                    self.finished.emit()
                    return
