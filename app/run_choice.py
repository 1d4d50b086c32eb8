"""What the window analyses: a named target, or the program with its arguments and step.

Kept apart from the window so the analysis bar's rules (arguments remembered per script
across restarts, an unclosed quote refusing to run) read in one place. ``RunChoice`` is a
mixin of :class:`app.window.MainWindow`; it uses the window's ``bar``, ``settings``,
``stage`` and ``open_script``.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from tfviz.report import Report
from tfviz.safefile import read_regular

from .analysis_bar import PROGRAM, step_name
from .panels.source_view import MAX_SOURCE_BYTES

if TYPE_CHECKING:
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QLabel

    from .analysis_bar import AnalysisBar


class RunChoice:
    """The analysis bar's side of the window: target or program, arguments, step."""

    if TYPE_CHECKING:  # the window's
        bar: AnalysisBar
        settings: QSettings
        stage: QLabel
        report: Report | None
        script: str | None
        target: str | None
        args: list[str]
        step: int
        mode: str
        named_targets: list[str]

        def open_script(self, path: str | None, target: str | None = None, *, run: bool = False,
                        args: list[str] | None = None, step: int | None = None) -> None: ...

    def saved_args(self, path: str) -> list[str]:
        """The arguments last used for the program at ``path`` (kept across restarts)."""
        saved = self.settings.value("program_args", {})
        text = saved.get(path, "") if isinstance(saved, dict) else ""
        try:
            return shlex.split(text)
        except ValueError:
            return []

    def _remember_args(self, path: str, args: list[str]) -> None:
        saved = self.settings.value("program_args", {})
        saved = dict(saved) if isinstance(saved, dict) else {}
        if args:
            saved[path] = shlex.join(args)
        else:
            saved.pop(path, None)
        self.settings.setValue("program_args", saved)

    def _read_script(self) -> str:
        """The script's text, read without ever waiting on it (a FIFO, ``/proc/kmsg``)."""
        assert self.script is not None  # read only once a script is open
        try:
            return read_regular(self.script, MAX_SOURCE_BYTES).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return ""  # the analysis says what is wrong with the file

    def _configure_bar(self, targets: list[str] | None = None) -> None:
        if targets is not None:
            self.named_targets = sorted(set(self.named_targets) | set(targets))
        self.bar.set_program(self.args, self.step)
        shown = self.target or (self.report.target if self.report and self.report.mode == "target" else None)
        self.bar.configure(self.named_targets, self.mode == "program", shown or "loss")

    def _focus_choice(self) -> None:
        if self.bar.is_shown("combo"):
            self.bar.combo.setFocus()
            self.bar.combo.showPopup()
        else:
            self.stage.setText("This script has no function to choose: its program is what is analyzed")

    def _focus_args(self) -> None:
        if self.bar.is_shown("args"):
            self.bar.args_edit.setFocus()
            self.bar.args_edit.selectAll()
        elif self.script:
            self.stage.setText("Arguments are for the program: choose “First gradient step” first")

    def _choice_made(self, choice: str) -> None:
        if choice == PROGRAM:
            if self.mode == "program" and not self.target:
                return  # already the program
            if not self._take_program_fields():
                return
            self.open_script(self.script, None, run=True, args=self.args, step=self.step)
        elif choice != self.target:
            self.open_script(self.script, choice)

    def _program_changed(self) -> None:
        if self.script and self._take_program_fields():
            self.open_script(self.script, None, run=True, args=self.args, step=self.step)

    def _take_program_fields(self) -> bool:
        """Arguments and step from the bar; False (and says why) when the arguments don't parse."""
        assert self.script is not None  # the bar shows the program's fields only for an open script
        try:
            args = self.bar.args()
        except ValueError as exc:  # an unclosed quote
            self.stage.setText(f"Arguments: {exc}; nothing was run")
            self.bar.args_edit.setFocus()
            return False
        if args != self.args:
            self.args = args
            self._remember_args(self.script, args)
        self.step = self.bar.step()
        return True

    def describe(self, report: Report) -> str:
        """What was analyzed, for the status bar: 'First gradient step: tape.gradient at x.py:9'."""
        if report.watch is not None and report.watch.step is not None:  # a watched run stopped there
            return f"{report.watch.fired} at gradient step {report.watch.step:,}: {report.target}"
        if report.mode == "program":
            return f"{step_name(self.step)}: {report.target}"
        return f"{report.target}()"
