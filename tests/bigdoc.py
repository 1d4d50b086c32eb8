"""A large synthetic saved analysis, for the validation tests and ``bench_saved_load.py``.

Each variable is listed with a source line (about 280 bytes of JSON); every
``graph_every``-th one is also drawn in the graph as its ``var:`` op feeding a
``ReadVariableOp`` that feeds the loss (about 1,000 bytes more). 400,000 variables with
``graph_every=10`` make a file of 147 MB.
"""

from __future__ import annotations

import json
from typing import Any


def big_document(n_variables: int, graph_every: int = 1) -> dict[str, Any]:
    """A valid schema-1 document with ``n_variables`` variables; every ``graph_every``-th
    one also has its ``var:`` op, a read op and two edges in the graph."""
    src = {"file": "/home/u/train.py", "line": 12, "code": "w = tf.Variable(init)"}
    variables, ops, edges = (
        [],
        [
            {
                "id": "loss",
                "name": "loss",
                "type": "AddN",
                "scope": "",
                "outputs": [{"dtype": "float32", "shape": []}],
                "on_path": True,
            }
        ],
        [],
    )
    for i in range(n_variables):
        name = f"layer_{i}/kernel"
        variables.append(
            {
                "name": name,
                "tf_name": name,
                "dtype": "float32",
                "shape": [4, 4],
                "status": "connected",
                "kind": None,
                "grad_norm": 0.5 + i % 7,
                "blocked_at": [],
                "explanation": "",
                "source": dict(src, line=12 + i % 500),
            }
        )
        if i % graph_every:
            continue
        read = f"layer_{i}/ReadVariableOp"
        ops.append(
            {
                "id": f"var:{name}",
                "name": name,
                "type": "VarHandleOp",
                "scope": f"layer_{i}",
                "outputs": [{"dtype": "resource", "shape": []}],
                "on_path": True,
                "is_variable": True,
                "grad_norm": 0.5,
            }
        )
        ops.append(
            {
                "id": read,
                "name": read,
                "type": "ReadVariableOp",
                "scope": f"layer_{i}",
                "outputs": [{"dtype": "float32", "shape": [4, 4]}],
                "source": src,
                "on_path": True,
                "grad_norm": 0.5,
            }
        )
        edges.append(
            {
                "src": f"var:{name}",
                "dst": read,
                "src_output": 0,
                "dst_input": 0,
                "dtype": "resource",
                "shape": [],
                "status": "passes",
                "grad_norm": 0.5,
            }
        )
        edges.append(
            {
                "src": read,
                "dst": "loss",
                "src_output": 0,
                "dst_input": i,
                "dtype": "float32",
                "shape": [4, 4],
                "status": "passes",
                "grad_norm": 0.5,
            }
        )
    return {
        "schema_version": 1,
        "script": "/home/user/train.py",
        "target": "loss",
        "ok": True,
        "tfviz": "0.1.0",
        "tensorflow": "2.21.0",
        "variables": variables,
        "problems": [],
        "graph": {"ops": ops, "edges": edges, "functions": []},
        "timings_s": {"trace": 1.0},
        "targets": ["loss"],
        "traced": True,
        "read_not_trained": [],
        "mode": "target",
        "stdout": "",
        "stderr": "",
    }


def big_json(n_variables: int, graph_every: int = 1) -> bytes:
    return json.dumps(big_document(n_variables, graph_every)).encode()


def deep_document(n_layers: int, ops_per_layer: int = 100) -> dict[str, Any]:
    """A model-shaped graph: ``n_layers`` Keras-style layers in a chain, each a scope of
    ``ops_per_layer`` ops (its kernel's ``var:`` op, the read, and a chain of arithmetic),
    every op with its source line. The window opens it with one box per layer."""
    doc = big_document(0)
    ops, edges, variables = doc["graph"]["ops"], doc["graph"]["edges"], doc["variables"]
    ops.clear()
    kinds = ("MatMul", "BiasAdd", "Relu", "Mul", "AddV2", "Sigmoid", "Tanh", "Sub")
    prev = None
    for i in range(n_layers):
        scope = f"model/block_{i}"
        name = f"block_{i}/kernel"
        src = {"file": "/home/user/model.py", "line": 20 + i % 300, "code": "x = self.dense(x)"}
        variables.append(
            {
                "name": f"model.block_{i}.kernel",
                "tf_name": name,
                "dtype": "float32",
                "shape": [64, 64],
                "status": "connected",
                "kind": None,
                "grad_norm": 0.5 + i % 7,
                "blocked_at": [],
                "explanation": "",
                "source": src,
            }
        )
        ids = [f"var:{name}"] + [f"{scope}/op_{k}" for k in range(1, ops_per_layer)]
        for k, op_id in enumerate(ids):
            op: dict[str, Any] = {
                "id": op_id,
                "name": name if k == 0 else op_id,
                "type": "VarHandleOp" if k == 0 else "ReadVariableOp" if k == 1 else kinds[k % len(kinds)],
                "scope": scope,
                "outputs": [
                    {"dtype": "resource" if k == 0 else "float32", "shape": [] if k == 0 else [32, 64]}
                ],
                "on_path": True,
                "grad_norm": 0.5,
                "source": src,
            }
            if k == 0:
                op["is_variable"] = True
            ops.append(op)
        for k in range(1, ops_per_layer):
            edges.append(_edge(ids[k - 1], ids[k], 0))
        if prev is not None:
            edges.append(_edge(prev, ids[2], 1))
        prev = ids[-1]
    ops.append(
        {
            "id": "loss",
            "name": "loss",
            "type": "Mean",
            "scope": "",
            "on_path": True,
            "outputs": [{"dtype": "float32", "shape": []}],
        }
    )
    edges.append(_edge(prev, "loss", 0))
    return doc


def _edge(src: str, dst: str, dst_input: int) -> dict[str, Any]:
    return {
        "src": src,
        "dst": dst,
        "src_output": 0,
        "dst_input": dst_input,
        "dtype": "float32",
        "shape": [32, 64],
        "status": "passes",
        "grad_norm": 0.5,
    }


def a_problem(**source: Any) -> dict[str, Any]:
    """One stop_gradient problem at the loss, affecting the first variable, at ``f.py:3``
    (``source`` adds to or replaces its source's fields)."""
    return {
        "kind": "stop_gradient",
        "severity": "error",
        "op": "loss",
        "op_type": "AddN",
        "message": "m",
        "variables": ["layer_0/kernel"],
        "source": {"file": "f.py", "line": 3, "code": "x", **source},
        "hint": "h",
    }
