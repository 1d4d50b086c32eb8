"""The analysis bar's side of the window: a named target or the program, its arguments, its step.

Kept apart from the window so the bar's rules (arguments remembered per script across
restarts, an unclosed quote refusing to run) read in one place. The bar edits; the
:class:`~app.analysis.AnalysisController` holds what was asked and runs it.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject

from .analysis import AnalysisController
from .analysis_bar import PROGRAM, AnalysisBar


class RunChoice(QObject):
    """Connects the analysis bar to the analysis: a choice made runs it; each run shows in the bar."""

    def __init__(
        self,
        bar: AnalysisBar,
        analysis: AnalysisController,
        say: Callable[[str], None],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.bar, self.analysis, self.say = bar, analysis, say
        bar.choiceMade.connect(self._choice_made)
        bar.programChanged.connect(self._program_changed)
        analysis.starting.connect(self.configure)
        analysis.reportReady.connect(lambda report: self.configure(report.targets))

    def configure(self, targets: list[str] | None = None) -> None:
        """Show in the bar what is analyzed: the script's functions, the program's fields."""
        a = self.analysis
        if targets is not None:
            a.named_targets = sorted(set(a.named_targets) | set(targets))
        self.bar.set_program(a.args, a.step)
        shown = a.target or (a.report.target if a.report and a.report.mode == "target" else None)
        self.bar.configure(a.named_targets, a.mode == "program", shown or "loss")

    def focus_choice(self) -> None:
        if self.bar.is_shown("combo"):
            self.bar.combo.setFocus()
            self.bar.combo.showPopup()
        else:
            self.say("This script has no function to choose: its program is what is analyzed")

    def focus_args(self) -> None:
        if self.bar.is_shown("args"):
            self.bar.args_edit.setFocus()
            self.bar.args_edit.selectAll()
        elif self.analysis.script:
            self.say("Arguments are for the program: choose “First gradient step” first")

    def take_program_fields(self) -> bool:
        """Arguments and step from the bar into the analysis; False (and says why) when the
        arguments don't parse."""
        try:
            args = self.bar.args()
        except ValueError as exc:  # an unclosed quote
            self.say(f"Arguments: {exc}; nothing was run")
            self.bar.args_edit.setFocus()
            return False
        self.analysis.set_program(args, self.bar.step())
        return True

    def _choice_made(self, choice: str) -> None:
        a = self.analysis
        if a.script is None:
            return
        if choice == PROGRAM:
            if a.mode == "program" and not a.target:
                return  # already the program
            if self.take_program_fields():
                a.open(a.script, None, run=True, args=a.args, step=a.step)
        elif choice != a.target:
            a.open(a.script, choice)

    def _program_changed(self) -> None:
        a = self.analysis
        if a.script and self.take_program_fields():
            a.open(a.script, None, run=True, args=a.args, step=a.step)
