"""The exit status of every ``tfviz`` command, defined once.

An :class:`~enum.IntEnum`, so a member is the int ``sys.exit`` and the shell see.

=========  =====  ==============================================================
member     value  meaning
=========  =====  ==============================================================
OK           0    the command did what it was asked: ``check``/``export``: every
                  variable gets a gradient; ``jacobian``: a Jacobian was computed
                  (and ``-o`` written)
PROBLEMS     1    the answer is a finding, not a failure: ``check``/``export``:
                  gradient problems found (``export`` still writes its file);
                  ``jacobian``: the answer is not a matrix (no path from
                  ``--wrt`` to ``--of``, or the path is cut: the op is named)
ERROR        2    nothing could be answered: a bad option or name, a script that
                  cannot be analyzed, an output that cannot be written, no
                  display for the window
INTERNAL     3    the analysis worker only (``python -m tfviz.worker``): tfviz
                  itself failed; the error is sent as data before it exits
INTERRUPTED 130   Ctrl-C (128 + SIGINT, as a shell reports it)
HANGUP      129   SIGHUP (128 + its number)
TERMINATED  143   SIGTERM (128 + its number)
=========  =====  ==============================================================

>>> int(ExitStatus.PROBLEMS), ExitStatus(130).name
(1, 'INTERRUPTED')
"""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """How a ``tfviz`` command ended (see the module's table)."""

    OK = 0
    PROBLEMS = 1
    ERROR = 2
    INTERNAL = 3
    INTERRUPTED = 130
    HANGUP = 129
    TERMINATED = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C's KeyboardInterrupt is, so a command ends its
    worker and the program's processes the same way, and says which signal came."""

    def __init__(self, name: str, status: ExitStatus) -> None:
        super().__init__(name)
        self.name, self.status = name, status


def interrupted(exc: BaseException) -> tuple[str, ExitStatus]:
    """What ended a command (its words) and its exit status, as a shell reports a signal.

    >>> interrupted(KeyboardInterrupt())
    ('Ctrl-C', <ExitStatus.INTERRUPTED: 130>)
    >>> interrupted(Terminated("SIGTERM", ExitStatus.TERMINATED))
    ('SIGTERM', <ExitStatus.TERMINATED: 143>)
    """
    if isinstance(exc, Terminated):
        return exc.name, exc.status
    return "Ctrl-C", ExitStatus.INTERRUPTED
