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
INTERRUPTED 130   Ctrl-C, SIGTERM or SIGHUP (128 + SIGINT, as a shell reports it)
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
