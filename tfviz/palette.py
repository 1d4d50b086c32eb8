"""The one vocabulary of gradient statuses and how each looks: colour, dash, marker, words.

Okabe-Ito colours (colour-blind safe), each with its own dash pattern and marker glyph, so a
graph stays readable in greyscale. Qt-free: the window (:mod:`app.graph.palette` adds the pens
and icons), the exported images and the DOT/GraphML export all read these tables, so a status
has one colour everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tfviz.report import RAISING_KINDS, GraphEdge


@dataclass(frozen=True)
class Style:
    key: str
    label: str
    color: str
    dash: tuple[float, ...]  # () = solid
    width: float
    marker: str  # glyph drawn mid-edge; "" = none


STYLES: dict[str, Style] = {
    s.key: s
    for s in (
        Style("passes", "passes (gradient flows)", "#009E73", (), 1.6, ""),
        Style("raises", "raises (tape.gradient fails)", "#D55E00", (4, 1.5, 1, 1.5), 2.6, "✕"),
        Style("cut", "cut (no gradient: kind)", "#E69F00", (5, 3), 2.2, "//"),
        Style("stop_gradient", "stop_gradient", "#0072B2", (1, 2), 2.0, "⊘"),
        Style("integer", "integer (not differentiable dtype)", "#CC79A7", (6, 2, 1, 2, 1, 2), 1.6, "ℤ"),
        Style("nan", "NaN / Inf gradient", "#000000", (2, 1), 2.4, "!"),
        Style("zero", "zero (warning: the gradient is exactly 0 at these values)", "#56B4E9", (8, 2), 2.4,
              "0"),
        Style("vanishing", "vanishing (warning: the gradient arrives, over 5 decades smaller than near"
              " the loss)", "#3F5FB0", (), 2.4, "↓"),
        Style("exploding", "exploding (warning: the gradient arrives, over 5 decades larger than near"
              " the loss)", "#A6266E", (), 2.4, "↑"),
        Style("not_trained", "not trained (the loss reads it, but the step never updates it)", "#B59A00",
              (6, 2, 2, 2), 2.4, "↺"),
        Style("starved", "no gradient (none arrives here: cut further toward the target)", "#A89F91",
              (3, 3), 1.4, "∅"),
        Style("muted", "harmless cut (no variable needs it: BatchNorm moments, shape arithmetic)",
              "#9AA3AD", (1, 3), 1.2, ""),
        Style("off_path", "off-path (no variable→target path)", "#BBBBBB", (), 1.0, ""),
    )
}


def category(status: str | None) -> str:
    """Map an edge/op status (passes, off_path or a kind) to a legend category."""
    if not status or status == "passes":
        return "passes"
    if status in ("off_path", "starved", "muted"):
        return status
    if status == "cancelled":  # information: nothing after the layer lets it train, by design
        return "muted"
    if status in RAISING_KINDS:
        return "raises"
    if status in ("stop_gradient", "integer", "nan", "zero", "vanishing", "exploding", "not_trained"):
        return status
    return "cut"


#: Worst first: when several edges merge into one drawn edge, the worst wins. A gradient
#: that passes outranks one that never arrives, and a harmless cut ranks below both.
SEVERITY = ("raises", "nan", "cut", "not_trained", "stop_gradient", "integer", "zero", "exploding",
            "vanishing", "passes",
            "starved", "muted", "off_path")
#: Categories that mark a bug (or a warning) where they are drawn.
QUIET = frozenset({"passes", "off_path", "starved", "muted"})


def look(edge: GraphEdge) -> str:
    """The status an edge is drawn with: its own, except that a cut no variable needs is
    ``muted`` (BatchNorm's moments are not a bug)."""
    if edge.status not in ("passes", "off_path", "starved") and not edge.needed:
        return "muted"
    return edge.status


def worst(statuses: Iterable[str]) -> str:
    """The status of a merged edge: the worst of its on-path members (an off-path member,
    such as shape arithmetic beside a real path, never colours it).

    >>> worst(["passes", "integer"]), worst(["passes", "off_path"]), worst(["starved", "passes"])
    ('integer', 'passes', 'passes')
    """
    statuses = list(statuses)
    on = [s for s in statuses if s != "off_path"] or statuses
    cats = {category(s): s for s in on}
    for c in SEVERITY:
        if c in cats:
            return cats[c]
    return "off_path"


#: edge statuses along which a gradient arrives: the only ones with a magnitude to draw
CARRIES = frozenset({"passes", "zero"})


def carried_norm(edge: GraphEdge) -> float | None:
    """The gradient norm ``edge`` carries back, or None where no gradient arrives along it.

    A norm belongs to a tensor, not to an edge: a tensor read by a starved op has the norm
    its other readers give it, and drawing it there would show a gradient where none goes.
    """
    return edge.grad_norm if edge.status in CARRIES else None


#: The overlay's pen for an edge along which the gradient arrives but has no measured norm: a
#: tensor inside a loop or branch body is out of the tape's reach.
UNMEASURED_COLOR = "#6F7F96"
#: ... and for one along which no gradient arrives at all.
NO_GRADIENT_COLOR = "#CCCCCC"


STATUS_ICON_COLOR = {"connected": "#009E73", "disconnected": "#E69F00", "broken": "#D55E00",
                     "nan": "#000000", "zero": "#56B4E9", "not_trained": "#B59A00",
                     "vanishing": "#3F5FB0", "exploding": "#A6266E", "cancelled": "#98A9BC",
                     "read_not_trained": "#B8B8B8"}
#: Colours for text on white where the line colour is too light to read (sky blue: 2.2:1).
TEXT_COLOR = {"zero": "#1F6FA3", "cancelled": "#5F6B76", "not_trained": "#7A6800",
              "read_not_trained": "#8A8A8A", "starved": "#6B645A", "muted": "#5F6B76"}


def text_color(key: str) -> str:
    """The colour for words in the style of ``key`` (a legend category or a variable look)."""
    return TEXT_COLOR.get(key) or STATUS_ICON_COLOR.get(key) or STYLES.get(key, STYLES["passes"]).color


def variable_look(status: str, kind: str | None, magnitude: str | None = None) -> str:
    """How a variable is shown: its status, except that a connected variable whose
    gradient is NaN, exactly zero, vanishing or exploding is never shown as a plain
    "connected" tick.

    A variable the step never updates (``not_trained``) has its own look, whatever its status.

    >>> variable_look("connected", None), variable_look("connected", "zero"), variable_look("broken", "nan")
    ('connected', 'zero', 'broken')
    >>> variable_look("disconnected", "not_trained"), variable_look("connected", "not_trained")
    ('not_trained', 'not_trained')
    >>> variable_look("connected", None, "vanishing")
    'vanishing'
    """
    if kind == "not_trained":
        return kind
    if status == "connected" and kind is None and magnitude:
        return magnitude
    return kind if status == "connected" and kind in ("nan", "zero") else status


def badge_text(cat: str, n: int) -> str:
    """A group's problem badge: the marker then the count ("0·2" where the marker is a digit)."""
    marker = STYLES[cat].marker
    return f"{marker}·{n}" if marker[-1:].isdigit() else f"{marker}{n}"
