"""What the Details panel says about a group (a Keras layer or model, a function body, a scope).

A layer is where users think, so selecting one says what an op would: what it is,
which weights it holds and how their gradients end, what tensors go in and come out,
and which problems sit inside it.

Only what the report holds is said. A layer is named by the Keras class and settings
the trace recorded for its scope (``Conv2D``, ``filters 8 · strides (2, 2)``), else as a
Keras layer (its scope is named after a layer in the variables' paths); one holding inner
layers says how many (``Sequential with 4 inner layers``). A function body is titled as
the user wrote it (``body of while_loop at rnn.py:31``); anything else is a name scope. Its Python object,
where the variables' Python paths agree on one (``encoder.layers[0]``), is given beside it.

A group's *variables* are those it reads (edges from a weight into one of its ops)
and, for a layer, those whose TensorFlow path names it. Its *inputs* are the tensors
on edges entering it from outside, and the captured inputs inside it that nothing
feeds; its *outputs* are its tensors that an op outside reads. A tensor read by several
ops is listed once, with the worst status among its edges.
"""

from __future__ import annotations

import html

from tfviz.report import GraphEdge, Report, VariableReport
from tfviz.structure.hierarchy import layer_attributes

from .. import theme
from ..display import norm_text, shape_text
from ..graph.palette import QUIET, STYLES, category, look, text_color, variable_look, worst

#: Rows listed per table before "… and N more".
MAX_ROWS = 12
KIND_WORDS = {
    "layer": "Keras layer",
    "scope": "name scope",
    "root": "the whole graph",
    "gradient": "the ops of a gradient computation (tape.gradient) the graph holds",
}
#: Short words for a variable's gradient (as in the Variables panel).
VAR_WORDS = {
    "connected": "flows",
    "disconnected": "none",
    "broken": "raises",
    "zero": "zero",
    "nan": "NaN",
    "not_trained": "not trained",
    "vanishing": "vanishing",
    "exploding": "exploding",
    "cancelled": "cancelled",
}


def _short(cat: str) -> str:
    """A legend category in a word or two: ``no gradient``, ``stop_gradient``."""
    return STYLES[cat].label.split(" (")[0]


def _python_object(names: list[str]) -> str:
    """The Python object the variables' paths agree on (their longest common dotted head):
    ``enc.layers[0]`` for ``enc.layers[0].kernel`` and ``enc.layers[0].bias``; "" when none.

    >>> _python_object(["enc.layers[0].kernel", "enc.layers[0].bias"]), _python_object(["w", "b"])
    ('enc.layers[0]', '')
    >>> _python_object(["enc.layers[0].kernel", "enc.layers[1].kernel"]), _python_object(["m.w"])
    ('enc', 'm')
    """
    parts = [n.split(".")[:-1] for n in names]
    head = []
    for level in zip(*parts) if parts else ():
        if any(x != level[0] for x in level):
            break
        head.append(level[0])
    return ".".join(head)


def group_type(h, gid: str) -> str:
    """What a group is, in words, from what the hierarchy knows of it: a layer by its Keras
    class where the trace recorded it (``Conv2D``, ``Sequential with 4 inner layers``)."""
    g = h.groups[gid]
    if g.kind == "function":
        return "function body"
    if g.kind == "layer":
        sub = sum(1 for c in g.children if c in h.groups and h.groups[c].kind == "layer")
        what = layer_attributes(h, gid).get("class") or "Keras layer"
        return f"{what} with {sub} inner layer{'s' if sub > 1 else ''}" if sub else what
    return KIND_WORDS.get(g.kind, g.kind)


def _owned(v: VariableReport, layer: str) -> bool:
    """Whether ``layer`` appears in the variable's TensorFlow path (``encoder/enc_1/kernel``)."""
    return layer in (v.tf_name or "").split(":", 1)[0].split("/")[:-1]


def group_variables(report: Report, h, gid: str, members: set[str]) -> list[VariableReport]:
    """The variables a group reads, and (a layer) those whose TensorFlow path names it."""
    used: set[str] = set()
    for e in report.graph.edges:
        src, dst = h.alias.get(e.src, e.src), h.alias.get(e.dst, e.dst)
        if src.startswith("var:") and dst in members and dst != src:
            used.add(src[4:])
    used |= {m[4:] for m in members if m.startswith("var:")}
    g = h.groups[gid]
    if g.kind == "layer":
        used |= {v.name for v in report.variables if _owned(v, g.label)}
    return [v for v in report.variables if v.name in used]


def _crossing(report: Report, h, members: set[str]) -> tuple[dict, dict]:
    """Tensors entering and leaving the group: (src op, output index) -> its edges."""
    ins: dict[tuple[str, int], list[GraphEdge]] = {}
    outs: dict[tuple[str, int], list[GraphEdge]] = {}
    for e in report.graph.edges:
        if e.back or e.dtype == "resource":
            continue
        src, dst = h.alias.get(e.src, e.src), h.alias.get(e.dst, e.dst)
        if src.startswith("var:"):
            continue  # a weight: listed with the variables
        if dst in members and src not in members:
            ins.setdefault((e.src, e.src_output), []).append(e)
        elif src in members and dst not in members:
            outs.setdefault((e.src, e.src_output), []).append(e)
    return ins, outs


def _status_cell(es: list[GraphEdge], ops) -> str:
    st = worst(look(e) for e in es)
    cat = category(st)
    word = _short(cat) if cat != "cut" else st
    if cat == "starved":
        cut = next((ops.get(e.cut_at) for e in es if e.cut_at), None)
        word = f"no gradient: cut at {cut.type} {cut.name}" if cut else word
    grad = max((e.grad_norm for e in es if e.grad_norm is not None), default=None)
    return (
        f"<td style='color:{text_color(cat)}'>{STYLES[cat].marker} {html.escape(word)}</td>"
        f"<td align=right>{norm_text(grad)}</td>"
    )


def _table(*headers: str) -> str:
    """A table's start and its header row (the last column, a norm, aligned right)."""
    th = "".join(f"<th align={'right' if h == '|grad|' else 'left'}>{h}</th>" for h in headers)
    return "<table cellspacing=0 cellpadding=2>" + (f"<tr>{th}</tr>" if th else "")


def _heading(title: str, n: int) -> str:
    return f"<p style='margin:10px 0 2px 0'><b>{title}</b> ({n})</p>"


def _where(h, op_id: str) -> str:
    """An op outside the group, with the group that holds it: ``MatMul in enc_2``."""
    if op_id not in h.ops:
        return op_id
    op_id = h.alias.get(op_id, op_id)
    where = h.where(op_id)  # a function body by its short name: "body of while_loop"
    return f"{h.display_name(op_id)} in {where}" if where else h.display_name(op_id)


def _more(n: int, cols: int) -> str:
    return f"<tr><td colspan={cols}><i>… and {n} more</i></td></tr>" if n > 0 else ""


def group_html(report: Report, h, gid: str) -> str:
    """The Details panel's HTML for group ``gid`` of hierarchy ``h``."""
    esc = html.escape
    g = h.groups[gid]
    ops = h.ops
    order = h.members(gid)  # graph order
    members = set(order)
    variables = group_variables(report, h, gid, members)
    # the object named above; its variables are listed by their names within it
    obj = _python_object([v.name for v in variables if _owned(v, g.label)]) if g.kind == "layer" else ""
    out = [f"<h3 style='margin:0'>{esc(g.label)}</h3><b>{esc(group_type(h, gid))}</b>"]
    if obj:
        out.append(f" · <code>{esc(obj)}</code>")
    if g.scope and g.scope != g.label:
        out.append(f"<br><small>scope {esc(g.scope)}</small>")
    settings = [(k, v) for k, v in layer_attributes(h, gid).items() if k != "class"]
    if settings:
        out.append("<p>" + " · ".join(f"{esc(k)} <b>{esc(v)}</b>" for k, v in settings) + "</p>")
    out.append(f"<p>{g.n_ops} ops · on a variable→target path: {'yes' if g.on_path else 'no'}</p>")

    bad = [(c, n) for c, n in sorted(g.problems.items(), key=lambda cn: -cn[1])]
    if bad:
        parts = [
            f"<span style='color:{text_color(c)}'><b>{STYLES[c].marker} {n} × {esc(_short(c))}</b></span>"
            if c != "starved"
            # the hierarchy counts starved *variables* only
            else f"<span style='color:{text_color(c)}'><b>{STYLES[c].marker} {n} "
            f"variable{'s' if n > 1 else ''} no gradient reaches</b></span>"
            for c, n in bad
        ]
        out.append("<p>Inside: " + ", ".join(parts) + "</p>")
        probs = [o for o in (ops[m] for m in order if m in ops) if category(o.status) not in QUIET]
        if probs:
            out.append(_table())
            for o in probs[:MAX_ROWS]:
                cat = category(o.status)
                msg = o.message.split("\n", 1)[0]
                out.append(
                    f"<tr><td style='color:{text_color(cat)}'>{STYLES[cat].marker} {esc(o.status)}"
                    f"</td><td>{esc(o.type)} <b>{esc(h.title(o.id))}</b>"
                    + (f"<br><small>{esc(msg)}</small>" if msg else "")
                    + "</td></tr>"
                )
            out.append(_more(len(probs) - MAX_ROWS, 2) + "</table>")
    else:
        out.append("<p>No problem ops inside.</p>")

    out.append(_heading("Variables", len(variables)))
    if variables:
        out.append(_table("name", "shape", "gradient", "|grad|"))
        for v in variables[:MAX_ROWS]:
            vl = variable_look(v.status, v.kind, v.magnitude)
            word = VAR_WORDS.get(vl, vl) + (f": {v.kind}" if v.kind and vl == v.status else "")
            name = v.name[len(obj) + 1 :] if obj and v.name.startswith(obj + ".") else v.name
            out.append(
                f"<tr><td>{esc(name)}</td><td nowrap>{shape_text(v.shape)}</td>"
                f"<td nowrap style='color:{text_color(vl)}'><b>{esc(word)}</b></td>"
                f"<td align=right>{norm_text(v.grad_norm)}</td></tr>"
            )
        out.append(_more(len(variables) - MAX_ROWS, 4) + "</table>")
    else:
        out.append(f"<i style='color:{theme.MUTED}'>none: it holds and reads no trainable variable</i>")

    ins, outs = _crossing(report, h, members)
    fed = {e.dst for e in report.graph.edges}
    captured = [
        o
        for o in (ops[m] for m in order if m in ops)
        if o.type == "Placeholder" and o.id not in fed and o.outputs and o.outputs[0].dtype != "resource"
    ]
    out.append(_heading("Inputs", len(ins) + len(captured)))
    if ins or captured:
        out.append(_table("from", "tensor", "gradient", "|grad|"))
        rows = []
        for (src, i), es in ins.items():
            name = _where(h, src)
            rows.append(
                f"<tr><td>{esc(name)}{f':{i}' if i else ''}</td>"
                f"<td>{es[0].dtype}{shape_text(es[0].shape)}</td>{_status_cell(es, ops)}</tr>"
            )
        for o in captured:
            t = o.outputs[0]
            rows.append(
                f"<tr><td>{esc(h.display_name(o.id))}</td><td>{t.dtype}{shape_text(t.shape)}</td>"
                f"<td style='color:{theme.MUTED}'>captured input</td><td></td></tr>"
            )
        out.extend(rows[:MAX_ROWS])
        out.append(_more(len(rows) - MAX_ROWS, 4) + "</table>")
    out.append(_heading("Outputs", len(outs)))
    if outs:
        out.append(_table("from → to", "tensor", "gradient", "|grad|"))
        for (src, i), es in list(outs.items())[:MAX_ROWS]:
            dsts = sorted({_where(h, e.dst) for e in es})
            to = dsts[0] + (f" +{len(dsts) - 1}" if len(dsts) > 1 else "")
            name = (h.title(src) if src in ops else src) + (f":{i}" if i else "")  # inside: no group
            out.append(
                f"<tr><td>{esc(name)} → {esc(to)}</td><td>{es[0].dtype}{shape_text(es[0].shape)}</td>"
                f"{_status_cell(es, ops)}</tr>"
            )
        out.append(_more(len(outs) - MAX_ROWS, 4) + "</table>")
    out.append(f"<p style='color:{theme.MUTED}'><i>Double-click the box to expand it.</i></p>")
    return "".join(out)
