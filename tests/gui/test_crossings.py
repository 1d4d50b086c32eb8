"""Edge crossings of the layered layout: the count on graphs whose crossing number is known,
and the reduction steps that bring ResNet50's and MobileNetV2's gradient views to ``dot``'s
count (none). Pure Python, no TensorFlow, no Qt."""

from __future__ import annotations

from app.graph.layout import crossings, layered
from app.graph.layout.placement import GraphLayout
from tfviz.report import GraphDoc, GraphEdge, GraphOp
from tfviz.structure.hierarchy import ROOT, Hierarchy


def test_complete_bipartite_layers_cross_as_many_times_as_the_formula_says():
    # K(m,n) between two layers, in any order: C(m,2) * C(n,2) crossings
    for m, n in ((2, 2), (3, 3), (3, 4)):
        top, bottom = [f"t{i}" for i in range(m)], [f"b{j}" for j in range(n)]
        edges = [(t, b) for t in top for b in bottom]
        want = m * (m - 1) // 2 * n * (n - 1) // 2
        assert crossings.count([top, bottom], edges) == want
        assert crossings.count([top[::-1], bottom], edges) == want


def test_a_reversed_matching_crosses_every_pair_and_shared_ends_never_cross():
    top, bottom = list("abcde"), list("vwxyz")
    assert crossings.count([top, bottom], list(zip(top, bottom))) == 0
    assert crossings.count([top, bottom], list(zip(top, reversed(bottom)))) == 10  # C(5,2)
    fan = [("a", b) for b in bottom] + [(t, "z") for t in top]  # all share a or z
    assert crossings.count([top, bottom], fan) == 0


def test_dummy_segments_count_layer_by_layer_and_skipping_edges_are_ignored():
    # a long edge a -> c through the dummy d, beside the chain b -> e -> f; a -> f skips a layer
    edges = [("a", "d"), ("d", "c"), ("b", "e"), ("e", "f"), ("a", "f")]
    assert crossings.per_layer([["a", "b"], ["d", "e"], ["c", "f"]], edges) == [0, 0]
    assert crossings.per_layer([["a", "b"], ["e", "d"], ["c", "f"]], edges) == [1, 1]  # twice
    assert crossings.per_layer([["a", "b"], ["e", "d"], ["f", "c"]], edges) == [1, 0]


def test_crossed_edges_are_exactly_those_in_a_crossing():
    succ = {"a": ["y"], "b": ["x", "z"], "c": ["z"]}
    pos = {"x": 0, "y": 1, "z": 2}
    assert crossings.crossed_edges(["a", "b", "c"], succ, pos) == [("a", "y"), ("b", "x")]
    assert crossings.pair_crossings(["a", "b", "c"], succ, pos) == 1


def _int_graph(layers: list[list[str]], edges: list[tuple[str, str]]):
    """Names to the integer ids :func:`crossings.reduce_crossings` works on."""
    idx = {n: i for i, n in enumerate(n for L in layers for n in L)}
    pred: list[list[int]] = [[] for _ in idx]
    succ: list[list[int]] = [[] for _ in idx]
    for u, v in edges:
        succ[idx[u]].append(idx[v])
        pred[idx[v]].append(idx[u])
    lay = [0] * len(idx)
    for li, L in enumerate(layers):
        for n in L:
            lay[idx[n]] = li
    names = {i: n for n, i in idx.items()}
    return [[idx[n] for n in L] for L in layers], pred, succ, lay, names


# A bias's read chain (b0 -> b1) left of the main path, whose shortcut (relu -> d -> out) it
# must pass to reach bias_add: one crossing. Sliding b1 alone past d moves the crossing up a
# layer, sliding b0 alone past relu adds one, so sweeps and transpose both stop there.
BIAS_LAYERS = [["b0", "relu", "k0"], ["b1", "d", "conv"], ["out", "bias_add"]]
BIAS_EDGES = [
    ("b0", "b1"),
    ("relu", "d"),
    ("relu", "conv"),
    ("k0", "conv"),
    ("d", "out"),
    ("conv", "bias_add"),
    ("b1", "bias_add"),
]


def test_only_sliding_the_side_chain_untangles_a_bias_read_behind_the_shortcut(monkeypatch):
    assert crossings.count(BIAS_LAYERS, BIAS_EDGES) == 1
    monkeypatch.setattr(crossings, "MAX_CHAIN", 0)  # no side-chain moves: dot's steps only
    layers, pred, succ, lay, _ = _int_graph(BIAS_LAYERS, BIAS_EDGES)
    assert crossings.reduce_crossings(layers, pred, succ, lay, sweeps=4) == 1
    monkeypatch.undo()
    layers, pred, succ, lay, names = _int_graph(BIAS_LAYERS, BIAS_EDGES)
    assert crossings.reduce_crossings(layers, pred, succ, lay, sweeps=4) == 0
    named = [[names[n] for n in L] for L in layers]
    assert crossings.count(named, BIAS_EDGES) == 0
    assert named[0].index("b0") > named[0].index("relu")  # the chain went right, as a whole
    assert named[1].index("b1") > named[1].index("d")


def test_transpose_swaps_neighbours_a_sweep_has_no_reason_to_move(monkeypatch):
    # x and y have the same barycenter (both fed by a and b), so a sweep keeps them; only
    # their other edges (x -> q, y -> p) say which goes left
    layers_ = [["a", "b"], ["x", "y"], ["p", "q"]]
    edges = [("a", "x"), ("a", "y"), ("b", "x"), ("b", "y"), ("x", "q"), ("y", "p")]
    assert crossings.count(layers_, edges) == 2
    monkeypatch.setattr(crossings, "MAX_CHAIN", 0)
    layers, pred, succ, lay, names = _int_graph(layers_, edges)
    assert crossings.reduce_crossings(layers, pred, succ, lay, sweeps=0) == 1  # K2,2 stays
    assert [names[n] for n in layers[1]] == ["y", "x"]


# Where ResNet50's conv2_block1 ends and conv2_block2 starts (op names shortened, order as
# in the graph): the layout before this change left one crossing here, repeated at every
# stage; 102 over the whole gradient view, against none for dot.
BLOCK_NODES = [
    "add0",
    "relu",
    "k_resource",
    "k_read",
    "conv",
    "b_resource",
    "b_read",
    "b_reshape",
    "b_squeeze",
    "bias_add",
    "add1",
]
BLOCK_EDGES = [
    ("add0", "relu"),
    ("relu", "conv"),
    ("relu", "add1"),
    ("k_resource", "k_read"),
    ("k_read", "conv"),
    ("conv", "bias_add"),
    ("b_resource", "b_read"),
    ("b_read", "b_reshape"),
    ("b_reshape", "b_squeeze"),
    ("b_squeeze", "bias_add"),
]


def _blocks(n: int) -> tuple[list[str], list[tuple[str, str]]]:
    """``n`` such block transitions in a chain, ending at a target."""
    nodes, edges, prev = [], [], None
    for b in range(n):
        ren = {x: f"{x}{b}" for x in BLOCK_NODES}
        nodes += list(ren.values())
        edges += [(ren[u], ren[v]) for u, v in BLOCK_EDGES]
        edges.append((ren["bias_add"], ren["add1"]))
        if prev is not None:
            edges.append((prev, ren["add0"]))
        prev = ren["add1"]
    return nodes + ["target"], edges + [(prev, "target")]


def test_resnet_block_transition_is_laid_out_without_crossings():
    o = layered.order(BLOCK_NODES, BLOCK_EDGES)
    assert layered.crossings(o) == 0
    assert sorted(x for L in o.layers for x in L if not x.startswith("\0")) == sorted(BLOCK_NODES)


def test_chained_block_transitions_stay_without_crossings():
    nodes, edges = _blocks(5)
    o = layered.order(nodes, edges)
    assert layered.crossings(o) == 0
    assert sum(1 for L in o.layers for x in L if not x.startswith("\0")) == len(nodes)


def test_grouped_placement_reports_no_crossings_for_the_block_transition():
    ops = [GraphOp(n, n, "Op", "", on_path=True) for n in BLOCK_NODES]
    doc = GraphDoc(
        ops=ops, edges=[GraphEdge(u, v, 0, 0, "float32", [], status="passes") for u, v in BLOCK_EDGES]
    )
    gl = GraphLayout(Hierarchy(doc), use_dot=False)
    scene = gl.place({ROOT})
    assert set(scene.nodes) == set(BLOCK_NODES)
    assert layered.crossings(gl.ordering(ROOT, False)) == 0


def test_a_small_graph_left_with_crossings_is_also_ordered_from_the_sources(monkeypatch):
    # started up from the sinks, n1's two edges straddle n0 -> n4 and no swap or sweep
    # gains anything (each move trades one crossing for another); from the sources, none
    nodes = [f"n{i}" for i in range(8)]
    edges = [("n1", "n3"), ("n2", "n7"), ("n0", "n4"), ("n1", "n7")]
    monkeypatch.setattr(layered, "SECOND_START_MAX", 0)
    assert layered.crossings(layered.order(nodes, edges)) == 1
    monkeypatch.undo()
    o = layered.order(nodes, edges)
    assert layered.crossings(o) == 0
    assert sorted(n for L in o.layers for n in L) == nodes


def test_x_placement_keeps_a_gradient_chain_straight_beside_wide_shape_arithmetic():
    # seed 1 in small: a variable's chain (var -> reshape) joins a deep trunk (t0..t3) at
    # einsum, and six shape-arithmetic chains feed the reshape's shape input. The old single
    # top-down pass left var at the far left and bent its chain into the trunk's column;
    # the priority sweeps keep var above its reshape, the trunk straight and the merge
    # between the two, and never change the order or overlap two boxes.
    layers = [
        [*(f"a{i}" for i in range(6)), "t0"],
        [*(f"s{i}" for i in range(6)), "t1"],
        ["var", "shape", "t2"],
        ["reshape", "t3"],
        ["einsum"],
        ["cut"],
    ]
    edges = [(f"a{i}", f"s{i}") for i in range(6)] + [(f"s{i}", "shape") for i in range(6)]
    edges += [
        ("t0", "t1"),
        ("t1", "t2"),
        ("t2", "t3"),
        ("t3", "einsum"),
        ("shape", "reshape"),
        ("var", "reshape"),
        ("reshape", "einsum"),
        ("einsum", "cut"),
    ]
    on_path = {"var", "reshape", "einsum", "cut", "t0", "t1", "t2", "t3"}
    w = 170.0
    size = {n: (w, 38.0) for L in layers for n in L}
    xy = layered.coordinates(layered.Ordering(layers, edges), size, prefer=on_path)
    cx = {n: x + w / 2 for n, (x, _) in xy.items()}
    assert cx["var"] == cx["reshape"]
    assert cx["t0"] == cx["t1"] == cx["t2"] == cx["t3"]
    assert cx["einsum"] == cx["cut"] == (cx["reshape"] + cx["t3"]) / 2
    for L in layers:
        assert all(cx[b] - cx[a] >= w + layered.H_GAP for a, b in zip(L, L[1:])), L
    # without the path to prefer, the off-path shape input pulls the reshape aside
    xy = layered.coordinates(layered.Ordering(layers, edges), size)
    assert xy["var"][0] != xy["reshape"][0]
