"""Writing an analysis as data: JSON (a saved analysis), DOT (Graphviz) and GraphML (Gephi, yEd).

DOT and GraphML come from one networkx graph, :func:`to_networkx`: a node per op and an
edge per tensor (several between two ops when several outputs feed several inputs), each
with its gradient ``status``, the problem ``kind`` where there is one, and ``grad_norm``.
A node's ``label`` is the name the window gives it (a variable's Python path, an op's title
in its box), ``op_name`` TensorFlow's, and ``layer`` the Keras layer box that holds it.
Image formats (PNG, SVG, PDF) are drawn by the app's scene (``app.graph.export.image``, run in
another process by ``tfviz export``); their title line's verdict is :func:`verdict`.

>>> from tfviz.report import GraphOp, Report
>>> r = Report(script="s.py", target="loss")
>>> r.graph.ops.append(GraphOp(id="var:w", name="w", type="Variable", scope="", status="passes"))
>>> g = to_networkx(r)
>>> g.nodes["var:w"]["status"], g.graph["target"]
('passes', 'loss')
"""

from __future__ import annotations

import os
from typing import Any

import networkx as nx

from tfviz.analysisfile import analysis_json
from tfviz.outputs import SIGNATURE, replacing, xml_safe  # SIGNATURE: the app's images carry it too
from tfviz.palette import STYLES, category
from tfviz.report import EDGE_OFF_PATH, EDGE_PASSES, EDGE_STARVED, Report
from tfviz.structure.hierarchy import Hierarchy
from tfviz.version import __version__
from tfviz.vocabulary import Kind, Status

DATA_FORMATS: tuple[str, ...] = ("json", "dot", "graphml")
IMAGE_FORMATS: tuple[str, ...] = ("png", "svg", "pdf")


def format_of(path: str) -> str:
    """The format named by ``path``'s extension (``json``, ``dot``, ``graphml``, ``png``…).

    >>> format_of("out/Graph.GV"), format_of("a.graphml")
    ('dot', 'graphml')
    """
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    ext = {"gv": "dot", "xml": "graphml"}.get(ext, ext)
    if ext not in DATA_FORMATS + IMAGE_FORMATS:
        raise ValueError(
            f"cannot tell the format of {path!r}: use .json, .dot or .graphml (images: .png, .svg, .pdf)"
        )
    return ext


def verdict(report: Report) -> str:
    """How many variables get no gradient, in words, for an image's title line.

    >>> from tfviz.report import VariableReport as V
    >>> r = Report(script="s.py", target="loss", variables=[V(n, n, "float32", [], s) for n, s in
    ...     (("a", "disconnected"), ("b", "disconnected"), ("c", "broken"), ("d", "connected"))])
    >>> verdict(r)
    '2 variables disconnected, 1 broken'
    >>> r.variables = r.variables[3:]; verdict(r)
    'every variable gets a gradient (1)'
    >>> r.variables[0].magnitude = "vanishing"; verdict(r)
    'every variable gets a gradient (1), 1 vanishing'
    """
    counts = {s: sum(v.status == s for v in report.variables) for s in (Status.DISCONNECTED, Status.BROKEN)}
    parts: list[str] = []
    for status, n in counts.items():
        if n:
            parts.append(f"{n} {status}" if parts else f"{n} variable{'s' * (n != 1)} {status}")
    for kind, words in ((Kind.NAN, "a NaN gradient"), (Kind.ZERO, "a zero gradient")):
        n = sum(v.status == Status.CONNECTED and v.kind == kind for v in report.variables)
        if n:
            parts.append(f"{n} with {words}")
    sizes = [
        f"{n} {m}"
        for m in (Kind.VANISHING, Kind.EXPLODING)
        if (n := sum(v.magnitude == m for v in report.variables))
    ]
    if parts:
        return ", ".join(parts + sizes)
    if not report.variables:
        return "no trainable variables"
    return ", ".join([f"every variable gets a gradient ({len(report.variables)})", *sizes])


def kind_of(status: str) -> str:
    """The problem kind an op or edge status names, or "" for passes/off_path/starved."""
    return "" if status in (EDGE_PASSES, EDGE_OFF_PATH, EDGE_STARVED) else status


def to_networkx(report: Report) -> nx.MultiDiGraph[str]:
    """The analyzed graph with plain attributes (no None: GraphML has no null), every
    string one XML 1.0 and UTF-8 can hold (:func:`~tfviz.outputs.xml_safe`): an op name
    with an escape sequence or a NUL made the GraphML unparsable and the DOT unwritable."""
    g: nx.MultiDiGraph[str] = nx.MultiDiGraph()
    g.graph.update(
        _clean(
            {
                "tfviz": report.tfviz or __version__,
                "tensorflow": report.tensorflow,
                "script": report.script,
                "target": report.target,
                "mode": report.mode,
                "ok": report.ok,
            }
        )
    )
    h = Hierarchy.of_report(report)
    for op in report.graph.ops:
        g.add_node(
            xml_safe(op.id),
            **_clean(
                {
                    "label": h.display_name(op.id),
                    "op_name": op.name,
                    "layer": h.layer_of(op.id),
                    "type": op.type,
                    "scope": op.scope,
                    "function": op.group,
                    "status": op.status,
                    "kind": kind_of(op.status),
                    "on_path": op.on_path,
                    "is_variable": op.is_variable,
                    "grad_norm": op.grad_norm,
                    "message": op.message,
                    "cut_at": op.cut_at,
                    "outputs": "; ".join(f"{t.dtype}{_shape(t.shape)}" for t in op.outputs),
                    "file": op.source.file if op.source else None,
                    "line": op.source.line if op.source else None,
                    "color": _color(op.status),
                }
            ),
        )
    for i, e in enumerate(report.graph.edges):
        g.add_edge(
            xml_safe(e.src),
            xml_safe(e.dst),
            key=i,
            **_clean(
                {
                    "status": e.status,
                    "kind": kind_of(e.status),
                    "grad_norm": e.grad_norm,
                    "dtype": e.dtype,
                    "shape": _shape(e.shape),
                    "src_output": e.src_output,
                    "dst_input": e.dst_input,
                    "back": e.back,
                    "needed": e.needed,
                    "cut_at": e.cut_at,
                    "color": _color(e.status),
                }
            ),
        )
    return g


def write(report: Report, path: str, fmt: str | None = None) -> None:
    """Write ``report`` to ``path`` as ``fmt`` (default: from the extension), replacing it
    only once complete. Raises :class:`~tfviz.outputs.OutputError` (an OSError) when the
    file cannot be written, ValueError for a format not written here."""
    fmt = fmt or format_of(path)
    if fmt == "json":
        text = analysis_json(report)
    elif fmt == "dot":
        text = dot_text(to_networkx(report))
    elif fmt == "graphml":
        text = graphml_text(to_networkx(report))
    else:
        raise ValueError(f"{fmt} is not a data format (use json, dot or graphml)")
    with replacing(path) as fh:
        fh.write(text)


def graphml_text(g: nx.MultiDiGraph[str]) -> str:
    """The graph in GraphML, as networkx's ``generate_graphml`` writes it (one ``<key>`` per
    attribute, named by it; an edge's id is its key), written as text directly: networkx
    builds an ElementTree element per value first, 15 of the 20 s a 100,000-op graph took.
    :func:`graphml_by_networkx` is the twin the tests hold it to."""
    keys: dict[tuple[str, str], str] = {}

    def declare(scope: str, data: dict[str, Any]) -> None:
        for name, value in data.items():
            keys.setdefault((scope, name), _GRAPHML_TYPES[type(value)])

    declare("graph", g.graph)
    for _, d in g.nodes(data=True):
        declare("node", d)
    for _, _, d in g.edges(data=True):
        declare("edge", d)
    out = [
        f"<!-- {SIGNATURE} {__version__} -->",
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns"'
        ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
        ' xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns'
        ' http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">',
    ]
    out += [
        f'  <key id={_xml_attr(n)} for="{scope}" attr.name={_xml_attr(n)} attr.type="{t}" />'
        for (scope, n), t in keys.items()
    ]
    out.append('  <graph edgedefault="directed">')
    for n, d in g.nodes(data=True):
        out.append(f"    <node id={_xml_attr(n)}>")
        out += _graphml_data(d, "      ")
        out.append("    </node>")
    for u, v, k, d in g.edges(keys=True, data=True):
        out.append(f"    <edge source={_xml_attr(u)} target={_xml_attr(v)} id={_xml_attr(k)}>")
        out += _graphml_data(d, "      ")
        out.append("    </edge>")
    out += _graphml_data(g.graph, "    ")
    out += ["  </graph>", "</graphml>"]
    return "\n".join(out) + "\n"


def graphml_by_networkx(g: nx.MultiDiGraph[str]) -> str:
    """The same GraphML from networkx's own writer: slow on large graphs, kept as the twin
    :func:`graphml_text` is tested against."""
    lines = list(nx.generate_graphml(g, named_key_ids=True, edge_id_from_attribute=None))
    head = 1 if lines and lines[0].startswith("<?xml") else 0
    lines.insert(head, f"<!-- {SIGNATURE} {__version__} -->")
    return "\n".join(lines) + "\n"


#: GraphML's name for each Python type a value has here (networkx's: a Python int is "long")
_GRAPHML_TYPES: dict[type, str] = {str: "string", bool: "boolean", int: "long", float: "double"}


def _graphml_data(d: dict[str, Any], indent: str) -> list[str]:
    return [f"{indent}<data key={_xml_attr(k)}>{_xml_text(v)}</data>" for k, v in d.items()]


def _xml_text(v: Any) -> str:
    return str(v).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _xml_attr(v: Any) -> str:
    """A quoted XML attribute value; tab, newline and carriage return as references, since
    a reader turns them into spaces otherwise."""
    text = _xml_text(v).replace('"', "&quot;").replace("\t", "&#09;").replace("\n", "&#10;")
    return '"' + text.replace("\r", "&#13;") + '"'


def dot_text(g: nx.MultiDiGraph[str]) -> str:
    """The graph in Graphviz's DOT language, every id and value quoted.

    networkx writes DOT only through pydot or pygraphviz; this writer needs neither.
    """
    out = [f"// {SIGNATURE} {__version__}", "digraph tfviz {"]
    if g.graph:
        out.append(f"  graph [{_attrs(g.graph)}];")
    out.append('  node [shape="box", style="rounded", fontname="Helvetica"];')
    for n, d in g.nodes(data=True):
        out.append(f"  {_quote(n)} [{_attrs(d)}];")
    for u, v, d in g.edges(data=True):
        out.append(f"  {_quote(u)} -> {_quote(v)} [{_attrs(d)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def _attrs(d: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_quote(v)}" for k, v in d.items())


def _quote(v: Any) -> str:
    if isinstance(v, bool):
        v = "true" if v else "false"
    text = str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "")
    return f'"{text}"'


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    return {k: xml_safe(v) if isinstance(v, str) else v for k, v in d.items() if v is not None and v != ""}


def _shape(shape: list[int | None] | None) -> str:
    if shape is None:
        return ""
    return "[" + ",".join("?" if s is None else str(s) for s in shape) + "]"


def _color(status: str) -> str:
    """The status's colour in the window (:mod:`tfviz.palette`): a DOT or GraphML reader sees
    what the app shows.

    >>> _color("passes"), _color("stop_gradient"), _color("frozen_copy")
    ('#009E73', '#0072B2', '#E69F00')
    """
    return STYLES[category(status)].color
