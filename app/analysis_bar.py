"""The analysis bar: what to differentiate, and the program's command line.

*First gradient step* runs the script as a program (``python SCRIPT ARGS``)
up to its N-th gradient computation and diagnoses that step; each named
target is a zero-argument function of the script, differentiated on its own.
Arguments and step only mean something for the program, so they are shown
only while the program is what is analyzed. Everything is reachable from the
keyboard: Alt+A (analyze), Alt+R (arguments), Alt+T (step), Enter runs. *Run until…*
watches the program step after step instead (the Training dock, Ctrl+Shift+R).
"""

from __future__ import annotations

import re
import shlex

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QLabel, QLineEdit, QPushButton, QSizePolicy, QSpinBox, QToolBar

#: Combo data of the program entry (named targets carry their function name).
PROGRAM = ""


#: Combo data of the "more…" entry, which shows the targets kept behind it.
MORE = "\x00more"
_LOSSY = re.compile(r"loss|objective|cost|nll|elbo|energy|penalty|criterion", re.I)
_BUILDER = re.compile(
    r"^_*(make|build|create|get|load|init|setup|prepare|new)(_|$)"
    r"|_(model|generator|discriminator|dataset|data|optimizer|layer|net)$",
    re.I,
)


def rank_targets(targets: list[str], current: str | None = None) -> tuple[list[str], list[str]]:
    """The targets to list first, and those kept behind "more…".

    ``loss``-like names come first; when there is one, the other names wait behind
    "more…". Names that look like builders (``make_generator``, ``build_model``) always
    wait there. The current target is always listed.

    >>> rank_targets(["make_generator", "probe", "gen_loss", "loss"])
    (['loss', 'gen_loss'], ['probe', 'make_generator'])
    >>> rank_targets(["a", "b", "build_model"], current="build_model")
    (['a', 'b', 'build_model'], [])
    """
    lossy = sorted((t for t in targets if _LOSSY.search(t)), key=lambda t: (t != "loss", len(t), t))
    builders = [t for t in targets if _BUILDER.search(t) and t not in lossy]
    plain = [t for t in targets if t not in lossy and t not in builders]
    first, rest = (lossy, plain + builders) if lossy else (plain, builders)
    if current in rest:
        first, rest = first + [current], [t for t in rest if t != current]
    return first, rest


def step_name(step: int) -> str:
    """>>> step_name(1), step_name(3)
    ('First gradient step', 'Gradient step 3')
    """
    return "First gradient step" if step == 1 else f"Gradient step {step}"


def split_args(text: str) -> list[str]:
    """The program's arguments as a shell would split them; ValueError on an open quote.

    >>> split_args("--lr 0.1 --name 'my run'")
    ['--lr', '0.1', '--name', 'my run']
    """
    return shlex.split(text)


class AnalysisBar(QToolBar):
    #: The user picked an entry: a target's name, or PROGRAM for the first gradient step.
    choiceMade = Signal(str)
    #: The user asked to run the program with the arguments and step now shown.
    programChanged = Signal()
    #: The user asked for a watched run (Run until…).
    watchRequested = Signal()

    def __init__(self, parent=None):
        super().__init__("Analysis", parent)
        self.setObjectName("toolbar_analysis")
        self.setMovable(False)
        self.setFloatable(False)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.PreventContextMenu)

        self.combo = QComboBox()
        self.combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.combo.setToolTip(
            "What to differentiate: the program's gradient step, as it runs,"
            " or one of the script's functions that return a loss"
        )
        self.combo.activated.connect(self._activated)
        self._all_targets: list[str] = []
        self.what = QLabel()  # in place of the combo when there is nothing to choose
        self.what.setTextFormat(Qt.TextFormat.PlainText)
        self.what.setStyleSheet("font-weight: bold")
        self.what.setToolTip(
            "This script defines no function that returns a loss, so tfviz runs it"
            " as a program and diagnoses its gradient step"
        )
        self.args_edit = QLineEdit()
        self.args_edit.setPlaceholderText("none (e.g. --epochs 3)")
        self.args_edit.setClearButtonEnabled(True)
        self.args_edit.setMinimumWidth(280)
        self.args_edit.setMaximumWidth(560)
        self.args_edit.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.args_edit.setToolTip(
            "The program's command line, as in python SCRIPT ARGS."
            " Press Enter to run it again; remembered for this script."
        )
        self.args_edit.returnPressed.connect(self.programChanged)
        self.step_spin = QSpinBox()
        self.step_spin.setRange(1, 1_000_000)
        self.step_spin.setKeyboardTracking(False)  # typing "12" is one change, not two
        self.step_spin.setFixedWidth(72)
        self.step_spin.setToolTip(
            "Diagnose the program's N-th gradient computation (a GAN's generator step, say)"
        )
        self._step_timer = QTimer(self, singleShot=True, interval=500)  # arrow presses coalesce
        self._step_timer.timeout.connect(self.programChanged)
        self.step_spin.valueChanged.connect(self._step_changed)
        self._quiet = False

        self.run_button = QPushButton()
        self.run_button.setText("Run")
        self.run_button.setToolTip("Run the program with these arguments and step (Enter)")
        self.run_button.clicked.connect(self.programChanged)
        self.until_button = QPushButton("Run until…")
        self.until_button.setToolTip(
            "Run the program, watching every gradient step, until one goes NaN,"
            " None, zero, vanishing or exploding (Ctrl+Shift+R)"
        )
        self.until_button.clicked.connect(self.watchRequested)

        self._actions: dict[str, list] = {}
        for key, text, w in (
            ("combo", "&Analyze:", self.combo),
            ("args", "A&rguments:", self.args_edit),
            ("step", "S&tep:", self.step_spin),
        ):
            label = QLabel(text)
            label.setBuddy(w)
            label.setContentsMargins(8, 0, 4, 0)
            self._actions[key] = [self.addWidget(label), self.addWidget(w)]
            if key == "combo":
                self._actions["what"] = [self.addWidget(self.what)]
        self._actions["step"] += [self.addWidget(self.run_button), self.addWidget(self.until_button)]

    # -- state ----------------------------------------------------------------------
    def configure(self, targets: list[str], program: bool, target: str | None) -> None:
        """Entries for ``targets``; ``program`` says whether the program is what is analyzed
        (then the current entry is the gradient step, else ``target``)."""
        self._quiet = True
        self.combo.clear()
        self.combo.addItem(step_name(self.step_spin.value()), PROGRAM)
        self._all_targets = list(targets)
        first, rest = rank_targets(targets, None if program else target)
        for t in first:
            self.combo.addItem(f"{t}()", t)
        if rest:
            self.combo.addItem(f"more… ({len(rest)})", MORE)
            self.combo.setItemData(
                self.combo.count() - 1,
                "Other functions of the script: " + ", ".join(rest),
                Qt.ItemDataRole.ToolTipRole,
            )
        i = 0 if program else max(0, self.combo.findData(target or ""))
        self.combo.setCurrentIndex(i)
        self._last = self.combo.currentData()
        self._quiet = False
        self._show("combo", len(targets) > 0)
        self._actions["combo"][0].setVisible(True)  # "Analyze:" introduces the label too
        self.what.setText(self.combo.itemText(0))
        self._show("what", not targets)
        self._show("args", program)
        self._show("step", program)
        self.setVisible(program or len(targets) > 0)

    def _activated(self, i: int) -> None:
        data = self.combo.itemData(i)
        if data != MORE:
            self._last = data
            self.choiceMade.emit(data)
            return
        self.show_all()
        self.combo.showPopup()

    def show_all(self) -> None:
        """List every target: what "more…" does."""
        self._quiet = True
        current = getattr(self, "_last", PROGRAM)
        i = self.combo.findData(MORE)
        if i >= 0:
            self.combo.removeItem(i)
        shown = {self.combo.itemData(j) for j in range(self.combo.count())}
        for t in self._all_targets:
            if t not in shown:
                self.combo.addItem(f"{t}()", t)
        self.combo.setCurrentIndex(max(0, self.combo.findData(current)))
        self._quiet = False

    def set_program(self, args: list[str], step: int) -> None:
        self._quiet = True
        self.args_edit.setText(shlex.join(args))
        self.step_spin.setValue(step)
        self.combo.setItemText(0, step_name(step))
        self.what.setText(step_name(step))
        self._quiet = False

    def args(self) -> list[str]:
        return split_args(self.args_edit.text())

    def step(self) -> int:
        return self.step_spin.value()

    def choice(self) -> str:
        """PROGRAM or the current target's name."""
        return self.combo.currentData() or PROGRAM

    def is_shown(self, key: str) -> bool:
        actions = self._actions[key]
        return self.isVisible() and actions[min(1, len(actions) - 1)].isVisible()

    def _show(self, key: str, on: bool) -> None:
        for a in self._actions[key]:
            a.setVisible(on)

    def _step_changed(self, step: int) -> None:
        if self.combo.count():
            self.combo.setItemText(0, step_name(step))
        self.what.setText(step_name(step))
        if not self._quiet:
            self._step_timer.start()
