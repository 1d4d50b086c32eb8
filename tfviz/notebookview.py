"""A report as a notebook shows it (``Report._repr_html_``): the verdict, the graph at layer
level with the problems marked on it, the problems at their lines and the variables with
their status.

The graph is the SVG ``tfviz export`` draws (the app's own scene, in a child process, no
display needed). Everything sits on a light card of its own,
with its own ink, so that JupyterLab's dark theme and Colab show it as its light theme does.
"""

from __future__ import annotations

import html
import os
import re
import tempfile

from tfviz.palette import NOTEBOOK as C
from tfviz.palette import STYLES, category
from tfviz.report import Report
from tfviz.vocabulary import Kind, Severity, Status

_CARD = (
    f"background:{C['card']};color:{C['ink']};border:1px solid {C['border']};border-radius:6px;padding:12px;"
    "font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;font-size:13px;line-height:1.45;"
    "max-width:100%;overflow:auto"
)
_TABLE = f"border-collapse:collapse;margin:6px 0 10px 0;color:{C['ink']};background:{C['card']}"
_CELL = f"border-bottom:1px solid {C['rule']};padding:3px 8px;text-align:left;vertical-align:top"
_HEAD = _CELL + f";font-weight:600;background:{C['head']}"
_SEVERITY_INK: dict[str, str] = {
    Severity.ERROR: C["error"],
    Severity.WARNING: C["warning"],
    Severity.INFO: C["info"],
}


def report_html(report: Report, graph: bool = True) -> str:
    """The report as one self-contained block of HTML (inline styles, the SVG inline)."""
    bad = not report.ok
    verdict = "gradient problems found" if bad else "every variable gets a gradient"
    badge = C["bad"] if bad else C["ok"]
    parts = [
        f'<div class="tfviz-report" style="{_CARD}">',
        f'<div style="font-size:14px;margin-bottom:6px"><b>{_e(os.path.basename(report.script))}</b>'
        f" &nbsp;target: <code>{_e(report.target)}</code> &nbsp;"
        f'<span style="background:{badge};color:{C["on_badge"]};border-radius:10px;padding:1px 8px">'
        f"{verdict}</span></div>",
    ]
    if graph:
        parts.append(_graph(report))
    if report.problems:
        parts.append(_problems(report))
    parts.append(_variables(report))
    parts.append("</div>")
    return "\n".join(parts)


def _graph(report: Report) -> str:
    """The SVG of the graph at layer level (``tfviz export --expand none``: each layer or
    function one box, a problem a badge on the box that holds it), which fits a notebook's
    width where the ops of a function opened would be thousands of pixels across; a line
    saying why where it cannot be drawn."""
    if not report.graph.ops:
        return ""
    from tfviz.exportcli import draw

    with tempfile.TemporaryDirectory(prefix="tfviz-view-") as tmp:
        out = os.path.join(tmp, "graph.svg")
        ok, said = draw(report, out, "svg", "none")
        if not ok:
            return f'<div style="color:{C["muted"]}">(the graph is not drawn here: {_e(said)})</div>'
        with open(out, encoding="utf-8") as fh:
            svg = fh.read()
    svg = re.sub(r"^<\?xml[^>]*\?>\s*", "", svg)
    svg = svg.replace("<svg ", '<svg style="max-width:100%;height:auto" ', 1)  # shrinks to fit, never grows
    return (
        f'<div style="overflow:auto;max-height:520px;border:1px solid {C["rule"]};margin:6px 0">{svg}</div>'
    )


def _problems(report: Report) -> str:
    rows = []
    for p in report.problems:
        where = f"{os.path.basename(p.source.file)}:{p.source.line}" if p.source else ""
        ink = _SEVERITY_INK.get(p.severity, C["ink"])
        rows.append(
            f'<tr><td style="{_CELL};color:{ink};font-weight:600">{_e(p.kind)}</td>'
            f'<td style="{_CELL}"><code>{_e(where)}</code></td>'
            f'<td style="{_CELL}">{_e(p.message)}'
            + (f'<br><span style="color:{C["muted"]}">{_e(p.hint)}</span>' if p.hint else "")
            + f'</td><td style="{_CELL}">{_e(", ".join(p.variables))}</td></tr>'
        )
    return (
        f'<div style="font-weight:600">Problems ({len(report.problems)})</div>'
        f'<table style="{_TABLE}"><tr>'
        + "".join(f'<th style="{_HEAD}">{h}</th>' for h in ("kind", "line", "why", "variables"))
        + "</tr>"
        + "".join(rows)
        + "</table>"
    )


def _variables(report: Report) -> str:
    rows = []
    for v in report.variables:
        state = v.kind if v.kind in (Kind.NAN, Kind.ZERO) else v.status
        healthy = v.status == Status.CONNECTED and not v.kind
        color = C["ok"] if healthy else STYLES[category(v.kind or Kind.OTHER)].color
        norm = "" if v.grad_norm is None else f"{v.grad_norm:.4g}"
        shape = "scalar" if not v.shape else "×".join("?" if d is None else str(d) for d in v.shape)
        rows.append(
            f'<tr><td style="{_CELL}"><code>{_e(v.name)}</code></td><td style="{_CELL}">{shape}</td>'
            f'<td style="{_CELL};color:{color};font-weight:600">{_e(state)}'
            + (f" [{_e(v.kind)}]" if v.kind and v.kind != state else "")
            + f'</td><td style="{_CELL}">{norm}</td></tr>'
        )
    return (
        f'<div style="font-weight:600">Variables ({len(report.variables)})</div>'
        f'<table style="{_TABLE}"><tr>'
        + "".join(f'<th style="{_HEAD}">{h}</th>' for h in ("variable", "shape", "status", "|grad|"))
        + "</tr>"
        + "".join(rows)
        + "</table>"
    )


def _e(text: object) -> str:
    return html.escape(str(text))
