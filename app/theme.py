"""The window's own colours: paper, ink, node fills, selection, panel accents.

Gradient statuses have their colours in :mod:`tfviz.palette`, shared with the exports;
these are the rest, so that no panel picks its own grey and a change of look is made in one
place. Names say what a colour is for, not what it looks like.
"""

from __future__ import annotations

from tfviz import palette

# -- paper and ink ---------------------------------------------------------------------------
PAPER = "#FFFFFF"
#: titles, labels and axis text on paper
INK = "#303030"
#: node labels and the log's plain output
INK_STRONG = "#202020"
#: an exported image's legend text
LEGEND_INK = "#333333"
#: small plot titles
TITLE_INK = "#404040"
#: readouts and reference lines in plots
SOFT_INK = "#505050"
#: field labels beside controls
LABEL_INK = "#606060"
#: secondary text: captions, hints, empty states, the TensorFlow name under a display name
MUTED = "#707070"
#: the off-path entry of an image's legend
OFF_PATH_INK = "#777777"
#: the faintest readable text: placeholders, axis captions
FAINT = "#808080"
#: the border of a node without a problem; greyed rows
QUIET_LINE = "#8A8A8A"
#: a plot's guide line
GUIDE = "#909090"
#: an image legend's rule
RULE = "#D0D0D0"

# -- the graph -------------------------------------------------------------------------------
VARIABLE_FILL, VARIABLE_INK = "#DCEBF5", "#102030"
GROUP_FILL = "#ECEFF3"
OFF_PATH_FILL, OFF_PATH_NODE_INK = "#F3F3F3", "#9A9A9A"
#: a node no gradient reaches: muted, never a bug's colour
STARVED_INK, STARVED_FILL, STARVED_VARIABLE_FILL = "#6B645A", "#F7F5F2", "#EEEAE4"
FUNCTION_FRAME, SCOPE_FRAME = "#A08850", "#9AA6B2"
#: the selection: a near-black outline and an amber ring; amber fills a selected node far out
SELECTION_LINE, SELECTION_RING, SELECTION_FILL = "#1A1A1A", "#FFC107", "#FFD54F"
#: the ops of a group drawn as one shape when zoomed far out
OVERVIEW_OP = "#9AA5B1"
#: the overview image's fills, by node kind, and its boxes' fill and frame
OVERVIEW_GROUP, OVERVIEW_VARIABLE, OVERVIEW_OFF_PATH = "#7F8C99", "#6FA3C8", "#D3D8DE"
OVERVIEW_FUNCTION = ("#FAF6EC", "#CDBB8E")
OVERVIEW_SCOPE = ("#F2F5F9", "#B4BEC8")
#: the minimap's scroll track and thumb
TRACK, THUMB = "#E4E8EC", "#9AA3AD"

# -- panels ----------------------------------------------------------------------------------
#: headings in the log, layers in search results
ACCENT = "#0B5394"
#: variables in search results
VARIABLE_ACCENT = "#007A5A"
#: ops in search results
OP_ACCENT = "#555555"
#: a dialog's warning line
WARNING_INK = "#B34700"
#: the Jacobian panel's status line
ERROR_INK, OK_INK = "#B0301C", "#1E6B3A"
#: the program's standard error in the log
STDERR_INK = "#B00020"
#: the error banner over the graph
BANNER_FILL, BANNER_INK = "#FDECEA", "#5F1A00"
#: a stale panel's greyed look
STALE = "#8C8C8C"
#: the source line a selection points at
SOURCE_LINE = "#FFE9A8"
#: Python syntax in the source view
SYNTAX_KEYWORD, SYNTAX_CONSTANT, SYNTAX_NUMBER = "#0033B3", "#871094", "#1750EB"
SYNTAX_DECORATOR, SYNTAX_STRING, SYNTAX_COMMENT = "#9E880D", "#067D17", "#8C8C8C"
#: one colour per series while a plot holds a few (the library's, which a notebook's charts use too)
SERIES = palette.SERIES
