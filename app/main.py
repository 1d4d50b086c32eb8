"""Entry point of the desktop app: ``run_app(script, target)``.

Imports only Qt and TF-free tfviz modules, so the window opens in well under a
second; TensorFlow lives in worker processes (see :mod:`app.worker_client`).
"""

from __future__ import annotations

import sys


def make_window(script: str | None = None, target: str | None = None):
    from .window import MainWindow

    w = MainWindow()
    w.show()
    if script:
        w.open_script(script, target)
    return w


def run_app(script: str | None = None, target: str | None = None) -> int:
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("tfviz")
    app.setOrganizationName("tfviz")
    window = make_window(script, target)
    code = app.exec()
    del window
    return int(code)


if __name__ == "__main__":
    sys.exit(run_app(*(sys.argv[1:3] + [None, None])[:2]))
