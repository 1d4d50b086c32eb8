"""The one vocabulary of gradient statuses and how each looks: colour, dash, marker, words.

Okabe-Ito colours (colour-blind safe), each with its own dash pattern and marker glyph, so a
graph stays readable in greyscale. Qt-free: the window (:mod:`app.graph.palette` adds the pens
and icons), the exported images and the DOT/GraphML export all read these tables, so a status
has one colour everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tfviz.report import GraphEdge
from tfviz.vocabulary import RAISING, Category, Flow, Kind, Status


@dataclass(frozen=True)
class Style:
    key: Category
    label: str
    color: str
    dash: tuple[float, ...]  # () = solid
    width: float
    marker: str  # glyph drawn mid-edge; "" = none


STYLES: dict[str, Style] = {
    s.key: s
    for s in (
        Style(Category.PASSES, "passes (gradient flows)", "#009E73", (), 1.6, ""),
        Style(Category.RAISES, "raises (tape.gradient fails)", "#D55E00", (4, 1.5, 1, 1.5), 2.6, "✕"),
        Style(Category.CUT, "cut (no gradient: kind)", "#E69F00", (5, 3), 2.2, "//"),
        Style(Category.STOP_GRADIENT, "stop_gradient", "#0072B2", (1, 2), 2.0, "⊘"),
        Style(
            Category.INTEGER, "integer (not differentiable dtype)", "#CC79A7", (6, 2, 1, 2, 1, 2), 1.6, "ℤ"
        ),
        Style(Category.NAN, "NaN / Inf gradient", "#000000", (2, 1), 2.4, "!"),
        Style(
            Category.ZERO,
            "zero (warning: the gradient is exactly 0 at these values)",
            "#56B4E9",
            (8, 2),
            2.4,
            "0",
        ),
        Style(
            Category.VANISHING,
            "vanishing (warning: the gradient arrives, over 5 decades smaller than near the loss)",
            "#3F5FB0",
            (),
            2.4,
            "↓",
        ),
        Style(
            Category.EXPLODING,
            "exploding (warning: the gradient arrives, over 5 decades larger than near the loss)",
            "#A6266E",
            (),
            2.4,
            "↑",
        ),
        Style(
            Category.NOT_TRAINED,
            "not trained (the loss reads it, but the step never updates it)",
            "#B59A00",
            (6, 2, 2, 2),
            2.4,
            "↺",
        ),
        Style(
            Category.STARVED,
            "no gradient (none arrives here: cut further toward the target)",
            "#A89F91",
            (3, 3),
            1.4,
            "∅",
        ),
        Style(
            Category.MUTED,
            "harmless cut (no variable needs it: BatchNorm moments, shape arithmetic)",
            "#9AA3AD",
            (1, 3),
            1.2,
            "",
        ),
        Style(Category.OFF_PATH, "off-path (no variable→target path)", "#BBBBBB", (), 1.0, ""),
    )
}


#: Statuses that are no cut (drawn per edge: built once).
_FLOWS = frozenset(Flow)
#: Kinds drawn in a look of their own; every other cut is drawn as ``cut``.
_OWN_LOOK = frozenset(
    {Kind.STOP_GRADIENT, Kind.INTEGER, Kind.NAN, Kind.ZERO, Kind.VANISHING, Kind.EXPLODING, Kind.NOT_TRAINED}
)


def category(status: str | None) -> Category:
    """Map an edge/op status (passes, off_path or a kind) to a legend category.

    >>> [category(s).value for s in ("passes", "no_gradient", "frozen_copy", "zero", "cancelled")]
    ['passes', 'raises', 'cut', 'zero', 'muted']
    """
    if not status or status == Flow.PASSES:
        return Category.PASSES
    if status in (Flow.OFF_PATH, Flow.STARVED, Category.MUTED):
        return Category(status)
    if status == Kind.CANCELLED:  # information: nothing after the layer lets it train, by design
        return Category.MUTED
    if status in RAISING:
        return Category.RAISES
    if status in _OWN_LOOK:
        return Category(status)
    return Category.CUT


#: Worst first: when several edges merge into one drawn edge, the worst wins. A gradient
#: that passes outranks one that never arrives, and a harmless cut ranks below both.
SEVERITY: tuple[Category, ...] = (
    Category.RAISES,
    Category.NAN,
    Category.CUT,
    Category.NOT_TRAINED,
    Category.STOP_GRADIENT,
    Category.INTEGER,
    Category.ZERO,
    Category.EXPLODING,
    Category.VANISHING,
    Category.PASSES,
    Category.STARVED,
    Category.MUTED,
    Category.OFF_PATH,
)
#: Categories that mark no bug (nor a warning) where they are drawn.
QUIET = frozenset({Category.PASSES, Category.OFF_PATH, Category.STARVED, Category.MUTED})


def look(edge: GraphEdge) -> str:
    """The status an edge is drawn with: its own, except that a cut no variable needs is
    ``muted`` (BatchNorm's moments are not a bug)."""
    if edge.status not in _FLOWS and not edge.needed:
        return Category.MUTED
    return edge.status


def worst(statuses: Iterable[str]) -> str:
    """The status of a merged edge: the worst of its on-path members (an off-path member,
    such as shape arithmetic beside a real path, never colours it).

    >>> worst(["passes", "integer"]), worst(["passes", "off_path"]), worst(["starved", "passes"])
    ('integer', 'passes', 'passes')
    """
    statuses = list(statuses)
    on = [s for s in statuses if s != Flow.OFF_PATH] or statuses
    cats = {category(s): s for s in on}
    for c in SEVERITY:
        if c in cats:
            return cats[c]
    return Flow.OFF_PATH


#: edge statuses along which a gradient arrives: the only ones with a magnitude to draw
CARRIES = frozenset({Flow.PASSES, Kind.ZERO})


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


STATUS_ICON_COLOR: dict[str, str] = {
    Status.CONNECTED: STYLES[Category.PASSES].color,
    Status.DISCONNECTED: STYLES[Category.CUT].color,
    Status.BROKEN: STYLES[Category.RAISES].color,
    Kind.NAN: STYLES[Category.NAN].color,
    Kind.ZERO: STYLES[Category.ZERO].color,
    Kind.NOT_TRAINED: STYLES[Category.NOT_TRAINED].color,
    Kind.VANISHING: STYLES[Category.VANISHING].color,
    Kind.EXPLODING: STYLES[Category.EXPLODING].color,
    Kind.CANCELLED: "#98A9BC",
    "read_not_trained": "#B8B8B8",
}
#: Colours for text on white where the line colour is too light to read (sky blue: 2.2:1).
TEXT_COLOR: dict[str, str] = {
    Kind.ZERO: "#1F6FA3",
    Kind.CANCELLED: "#5F6B76",
    Kind.NOT_TRAINED: "#7A6800",
    "read_not_trained": "#8A8A8A",
    Category.STARVED: "#6B645A",
    Category.MUTED: "#5F6B76",
}


def text_color(key: str) -> str:
    """The colour for words in the style of ``key`` (a legend category or a variable look)."""
    return TEXT_COLOR.get(key) or STATUS_ICON_COLOR.get(key) or STYLES.get(key, STYLES[Category.PASSES]).color


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
    if kind == Kind.NOT_TRAINED:
        return kind
    if status == Status.CONNECTED and kind is None and magnitude:
        return magnitude
    return kind if status == Status.CONNECTED and kind in (Kind.NAN, Kind.ZERO) else status


def badge_text(cat: str, n: int) -> str:
    """A group's problem badge: the marker then the count ("0·2" where the marker is a digit)."""
    marker = STYLES[cat].marker
    return f"{marker}·{n}" if marker[-1:].isdigit() else f"{marker}{n}"


#: A report in a notebook (:mod:`tfviz.notebookview`): a light card with its own ink, so that a
#: dark notebook theme shows it as a light one does (GitHub's light palette).
NOTEBOOK: dict[str, str] = {
    "card": "#ffffff",
    "ink": "#1f2328",
    "muted": "#57606a",
    "border": "#d0d7de",
    "rule": "#d8dee4",
    "head": "#f6f8fa",
    "ok": "#1a7f37",
    "bad": "#cf222e",
    "on_badge": "#ffffff",
    "error": "#cf222e",
    "warning": "#9a6700",
    "info": "#0969da",
}


#: One colour per series while a plot holds a few (Tableau 10): told apart at a glance, also in
#: print. The window's Training dock and a notebook's live chart draw layers in them.
SERIES: tuple[str, ...] = (
    "#4E79A7",
    "#F28E2B",
    "#E15759",
    "#76B7B2",
    "#59A14F",
    "#EDC948",
    "#B07AA1",
    "#FF9DA7",
    "#9C755F",
    "#BAB0AC",
)
