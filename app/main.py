"""Entry point of the desktop app: ``run_app(script, target, run=, args=, step=)``.

Imports only Qt and TF-free tfviz modules, so the window opens in well under a
second; TensorFlow lives in worker processes (see :mod:`app.worker_client`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from tfviz.exitstatus import ExitStatus

if TYPE_CHECKING:
    from tfviz.worker.forkserver import PrivateServer


def make_window(
    script: str | None = None,
    target: str | None = None,
    *,
    run: bool = False,
    args: list[str] | None = None,
    step: int = 1,
):
    """The window, opened on ``script`` (``args`` None: the arguments remembered for it)."""
    from .saved import is_saved_analysis
    from .window import MainWindow
    from .worker_client import WorkerPool

    # A saved analysis runs nothing: no spare worker (and no TensorFlow) starts behind it.
    saved = bool(script and is_saved_analysis(script))
    w = MainWindow(pool=WorkerPool(spare=False) if saved else None)
    w.show()
    if script:
        w.open_script(script, target, run=run, args=args, step=step)
    return w


def warm_server(script: str | None) -> PrivateServer | None:
    """The window's own warm server (:class:`~tfviz.worker.forkserver.PrivateServer`): every
    analysis after it has imported TensorFlow starts as a fork of it, in a fraction of a
    second, F5 after F5, Esc then F5, another script or a notebook alike. None where one is
    named already (``tfviz serve``'s), or for a saved analysis, which runs nothing."""
    import os

    from tfviz.worker.forkserver import SERVER_VARIABLE, PrivateServer

    from .saved import is_saved_analysis

    if os.environ.get(SERVER_VARIABLE) or (script and is_saved_analysis(script)):
        return None
    return PrivateServer()


def no_display_reason(environ: Mapping[str, str] | None = None, platform: str = sys.platform) -> str | None:
    """Why a window cannot open here, before Qt aborts the process over it.

    >>> no_display_reason({}, "linux")
    'no display (DISPLAY/WAYLAND_DISPLAY unset)'
    >>> [no_display_reason(env, "linux") for env in ({"DISPLAY": ":0"}, {"QT_QPA_PLATFORM": "offscreen"})]
    [None, None]
    >>> no_display_reason({}, "darwin") is None  # macOS and Windows always have one
    True
    """
    import os

    env = os.environ if environ is None else environ
    if env.get("QT_QPA_PLATFORM") or not platform.startswith("linux"):
        return None
    if not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        return "no display (DISPLAY/WAYLAND_DISPLAY unset)"
    return None


def run_app(
    script: str | None = None,
    target: str | None = None,
    *,
    run: bool = False,
    args: list[str] | None = None,
    step: int = 1,
) -> int:
    reason = no_display_reason()
    if reason:
        print(
            f"tfviz: cannot open the window: {reason}. In a terminal, use"
            f" `tfviz check {script or 'SCRIPT'}`.",
            file=sys.stderr,
        )
        return ExitStatus.ERROR
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("tfviz")
    app.setOrganizationName("tfviz")
    server = warm_server(script)
    try:
        window = make_window(script, target, run=run, args=args, step=step)
        code = app.exec()
        del window
    finally:
        if server is not None:
            server.close()
    return int(code)


if __name__ == "__main__":
    sys.exit(run_app(*(sys.argv[1:3] + [None, None])[:2]))
