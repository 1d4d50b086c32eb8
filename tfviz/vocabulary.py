"""The fixed words a verdict is made of: why a gradient is cut, how a variable fares, how
an edge is drawn, how grave a problem is.

Each is a ``(str, Enum)``: a member *is* its string, so it compares equal to the word read
back from JSON, an analysis file or a worker message, and serialises as that word. The
engine writes members, so a misspelt word is an ``AttributeError`` where it is made rather
than a colour silently missing from the legend; readers on the other side of a process
boundary see plain strings and need nothing from here.

>>> Kind.NAN == "nan", f"{Kind.NAN}", str(Status.BROKEN), Kind.ZERO, type(Kind.ZERO).__name__
(True, 'nan', 'broken', 'zero', 'Kind')
>>> import json; json.dumps({"kind": Kind.ZERO})
'{"kind": "zero"}'
"""

from __future__ import annotations

from enum import Enum


class Word(str, Enum):
    """A member that prints, formats, hashes and even reprs as its value (``enum.StrEnum``,
    which Python 3.10 lacks, keeps the ``<Kind.NAN: 'nan'>`` repr): a word quoted in a
    message or a tuple reads as it did when it was a plain string."""

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return repr(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Kind(Word):
    """Why a gradient does not arrive, or arrives suspect (the last five are warnings)."""

    UNIMPLEMENTED = "unimplemented"
    NO_GRADIENT = "no_gradient"
    NOT_DIFFERENTIABLE = "not_differentiable"
    INTEGER = "integer"
    STOP_GRADIENT = "stop_gradient"
    NOT_READ = "not_read"
    FROZEN_COPY = "frozen_copy"
    OUTSIDE_TAPE = "outside_tape"
    ASSIGN = "assign"
    PY_FUNCTION = "py_function"
    NAN = "nan"
    NOT_TRAINED = "not_trained"
    ZERO = "zero"
    VANISHING = "vanishing"
    EXPLODING = "exploding"
    CANCELLED = "cancelled"
    OTHER = "other"


#: Kinds whose gradient function raises, failing the whole ``tape.gradient`` call.
RAISING: frozenset[Kind] = frozenset({Kind.UNIMPLEMENTED, Kind.NO_GRADIENT})
#: Kinds that say how a gradient arrives rather than that it is cut.
MAGNITUDE: frozenset[Kind] = frozenset({Kind.ZERO, Kind.VANISHING, Kind.EXPLODING})


class Status(Word):
    """What ``tape.gradient`` returns for a variable: a tensor, None, or an exception."""

    CONNECTED = "connected"
    DISCONNECTED = "disconnected"
    BROKEN = "broken"


class Flow(Word):
    """An edge's or op's status when it is not a :class:`Kind` (a cut)."""

    #: the gradient passes
    PASSES = "passes"
    #: on no variable-to-target path at all
    OFF_PATH = "off_path"
    #: on a path, but a cut further toward the target keeps every gradient from it
    STARVED = "starved"


class Severity(Word):
    """How a problem weighs on the verdict: only errors make a report fail."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Category(Word):
    """A legend entry: the look an edge is drawn with. Several kinds share ``CUT``, both
    raising kinds are ``RAISES``, and a cut no variable needs is ``MUTED``."""

    PASSES = "passes"
    RAISES = "raises"
    CUT = "cut"
    STOP_GRADIENT = "stop_gradient"
    INTEGER = "integer"
    NAN = "nan"
    ZERO = "zero"
    VANISHING = "vanishing"
    EXPLODING = "exploding"
    NOT_TRAINED = "not_trained"
    STARVED = "starved"
    MUTED = "muted"
    OFF_PATH = "off_path"
