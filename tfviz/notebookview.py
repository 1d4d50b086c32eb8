"""A report as a notebook shows it (``Report._repr_html_``): the verdict, the graph at layer
level with the problems marked on it, the problems at their lines and the variables with
their status.

The graph is the SVG ``tfviz export`` draws (the app's own scene, in a child process, no
display needed). Everything sits on a light card of its own,
with its own ink, so that JupyterLab's dark theme and Colab show it as its light theme does.
"""

from __future__ import annotations

import html
import math
import os
import re
import tempfile
import time
from typing import Any

from tfviz.palette import NOTEBOOK as C
from tfviz.palette import SERIES, STYLES, category
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


def report_html(report: Report) -> str:
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
    from tfviz.commands.export import draw

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
        where = p.source.label(os.path.basename) if p.source else ""
        ink = _SEVERITY_INK.get(p.severity, C["ink"])
        rows.append(
            f'<tr><td style="{_CELL};color:{ink};font-weight:600">{_e(p.kind)}</td>'
            f'<td style="{_CELL}"><code>{_e(where)}</code></td>'
            f'<td style="{_CELL}">{_e(p.message)}'
            + (f'<br><span style="color:{C["muted"]}">{_e(p.hint)}</span>' if p.hint else "")
            + f'</td><td style="{_CELL}">{_e(", ".join(p.variables))}</td></tr>'
        )
    return _table("Problems", ("kind", "line", "why", "variables"), rows)


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
    return _table("Variables", ("variable", "shape", "status", "|grad|"), rows)


def _table(title: str, heads: tuple[str, ...], rows: list[str]) -> str:
    """A titled table (the title counts its rows), its head row, then ``rows`` as made."""
    head = "".join(f'<th style="{_HEAD}">{h}</th>' for h in heads)
    return (
        f'<div style="font-weight:600">{title} ({len(rows)})</div>'
        f'<table style="{_TABLE}"><tr>{head}</tr>{"".join(rows)}</table>'
    )


def _e(text: object) -> str:
    return html.escape(str(text))


class LiveChart:
    """``tfviz.check(path, until=...)`` in a notebook: each layer's gradient norm, step by
    step, drawn in the cell's output and redrawn in place as the worker sends the steps (at
    most every :data:`REDRAW_S` seconds). The program's own output goes on below it."""

    REDRAW_S = 0.5
    WIDTH, HEIGHT, PAD = 640, 220, 40

    def __init__(self) -> None:
        from IPython.display import HTML, display

        self._html: Any = HTML
        self.points: list[dict[str, Any]] = []
        self._drawn = 0.0
        self.handle = display(HTML(self.html()), display_id=True)  # type: ignore[no-untyped-call]

    def add(self, points: list[dict[str, Any]]) -> None:
        self.points.extend(points)
        if time.monotonic() - self._drawn >= self.REDRAW_S:
            self.redraw()

    def redraw(self) -> None:
        self._drawn = time.monotonic()
        if self.handle is not None:
            self.handle.update(self._html(self.html()))

    def html(self) -> str:
        """The chart: log10 of each layer's gradient norm against the step, the step where a
        condition fired marked; a legend of the layers."""
        w, h, pad = self.WIDTH, self.HEIGHT, self.PAD
        layers: list[str] = []
        for p in self.points:
            layers += [name for name in p.get("grad", {}) if name not in layers]
        logs = [
            math.log10(g)
            for p in self.points
            for g in p.get("grad", {}).values()
            if isinstance(g, (int, float)) and g > 0 and math.isfinite(g)
        ]
        steps = [int(p.get("step", 0)) for p in self.points]
        last = max(steps, default=0)
        fired = next((p for p in self.points if p.get("fired")), None)
        title = f"gradient norm per layer (log10), {last:,} step{'s' * (last != 1)}"
        if fired is not None:
            title += f": {fired['fired']} at step {fired['step']}"
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
            f'style="background:{C["card"]};max-width:100%">',
            f'<text x="{pad}" y="16" font-size="12" fill="{C["ink"]}">{_e(title)}</text>',
            f'<rect x="{pad}" y="24" width="{w - 2 * pad}" height="{h - 64}" fill="none"'
            f' stroke="{C["rule"]}"/>',
        ]
        if logs and last:
            low, high = math.floor(min(logs)), math.ceil(max(logs))
            high = high if high > low else low + 1

            def xy(step: int, g: float) -> str:
                x = pad + (w - 2 * pad) * ((step - 1) / max(1, last - 1))
                y = 24 + (h - 64) * (1 - (math.log10(g) - low) / (high - low))
                return f"{x:.1f},{y:.1f}"

            for i, layer in enumerate(layers):
                pts = [
                    xy(int(p["step"]), g)
                    for p in self.points
                    if isinstance(g := p.get("grad", {}).get(layer), (int, float))
                    and g > 0
                    and math.isfinite(g)
                ]
                color = SERIES[i % len(SERIES)]
                parts.append(
                    f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{" ".join(pts)}"/>'
                )
            for step, anchor, x in ((1, "start", pad), (last, "end", w - pad)):
                parts.append(
                    f'<text x="{x}" y="{h - 29}" font-size="10" text-anchor="{anchor}"'
                    f' fill="{C["muted"]}">step {step:,}</text>'
                )
            for value, y in ((high, 30), (low, h - 42)):
                parts.append(f'<text x="4" y="{y}" font-size="10" fill="{C["muted"]}">1e{value}</text>')
            if fired is not None:
                at = xy(int(fired["step"]), 10.0**low).split(",")[0]
                parts.append(f'<line x1="{at}" y1="24" x2="{at}" y2="{h - 40}" stroke="{C["bad"]}"/>')
        for i, layer in enumerate(layers[:8]):
            left = pad + (i % 4) * ((w - 2 * pad) // 4)
            top = h - 22 + (i // 4) * 14
            ink = SERIES[i % len(SERIES)]
            parts.append(f'<text x="{left}" y="{top}" font-size="10" fill="{ink}">{_e(layer[-28:])}</text>')
        parts.append("</svg>")
        return f'<div class="tfviz-live">{"".join(parts)}</div>'
