"""Details of a gradient path: where it starts and ends, then each hop (op, shape, status,
gradient norm), as HTML for the Details panel."""

from __future__ import annotations

import html
import math

from tfviz.structure.gradient_path import GradientPath
from tfviz.structure.hierarchy import Hierarchy

from .. import theme
from ..graph.palette import STYLES, category, text_color
from .docks import OP_STATUS_WORDS

_WORDS = {
    "passes": "passes",
    "starved": "no gradient arrives",
    "off_path": "off path",
    "not_trained": "not trained",
}


def _norm(g) -> str:
    if g is None:
        return "—"
    return f"{g:.3g}" if math.isfinite(g) else str(g)


def path_html(
    report,
    path: GradientPath,
    hidden: set[str] | frozenset = frozenset(),
    title: str = "",
    names: Hierarchy | None = None,
) -> str:
    """``hidden``: ops drawn as another node (a weight's reads), left out of the hops;
    ``title``: what the path starts at as the graph names it (a layer's box has no op, and
    its id is no name for a user); ``names``: the graph's hierarchy, whose display names
    the hops use (TensorFlow's name beneath, where it differs)."""
    esc = html.escape
    ops = {o.id: o for o in report.graph.ops}
    start, end = ops.get(path.start), ops.get(path.end)
    sname = title or (
        names.display_name(path.start)
        if names is not None
        else start.label or start.name
        if start
        else path.start
    )
    h = [f"<h3 style='margin:0'>Gradient path of {esc(sname)}</h3>"]
    if path.cut and end is not None:
        cat = category(end.status)
        what = (
            f"{end.label} ({end.type})"
            if end.label
            else end.name
            if end.name == end.type
            else f"{end.type} {end.name}"
        )
        words = OP_STATUS_WORDS.get(end.status, f"cut ({end.status})")
        here = "the variable" if start is not None and start.is_variable else "here"
        h.append(
            f"<p>From {here} to <span style='color:{text_color(cat)}'><b>{esc(what)}"
            f"</b></span>, where its gradient stops: {esc(words)}."
            + ("" if end.status == "zero" else " No gradient reaches it from the target.")
            + "</p>"
        )
        if end.message:
            h.append(f"<p style='color:{text_color(cat)}'>{esc(end.message)}</p>")
    elif path.end == "__target__":
        h.append(
            "<p>Every way from here to the target (other ops dimmed). "
            "Click the graph's background to show everything again.</p>"
        )
    hops = [x for x in path.hops if x.op not in hidden]
    if not hops:
        h.append("<p><i>No path: this node reaches no variable and no target.</i></p>")
        return "".join(h)
    h.append(
        f"<b>{len(hops)} hops</b> (one shortest way; {len(path.ops)} ops on the path)"
        "<table cellspacing=4><tr><th>#</th><th align=left>op</th><th align=left>shape</th>"
        "<th align=left>gradient</th><th align=right>norm</th></tr>"
    )
    for i, x in enumerate(hops, 1):
        cat = category(x.status)
        st = STYLES[cat]
        word = _WORDS.get(x.status, x.status)
        shown = names.display_name(x.op) if names is not None and x.op in names.ops else x.name
        tf_name = f" · {x.name}" if x.name != shown and not x.op.startswith("var:") else ""
        h.append(
            f"<tr><td>{i}</td><td>{esc(shown)}<br><small style='color:{theme.MUTED}'>{esc(x.type)}"
            f"{esc(tf_name)}</small></td><td>{esc(x.shape)}</td>"
            f"<td style='color:{text_color(cat)}'>{st.marker} {esc(word)}</td>"
            f"<td align=right>{_norm(x.grad_norm)}</td></tr>"
        )
    h.append("</table>")
    return "".join(h)
