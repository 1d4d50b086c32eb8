"""Jacobians: values equal tape.jacobian in target and program mode,
the memory guard, no path / cut answers, the chain-rule identity, the worker's
kept session and the CLI."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import EXAMPLES, ROOT
from tfviz.worker.launch import worker_command, worker_environment

# Each case: module-level deterministic variables, forward() -> named tensors,
# loss() for target mode, and a tape block for program mode.
CASES = {
    "dense": """
x = tf.constant([[0.5, -1.0, 2.0, 0.25], [1.0, 0.0, -0.5, 0.3]])
W = tf.Variable(tf.reshape(tf.range(12, dtype=tf.float32) / 10.0 - 0.5, [4, 3]), name="W")
b = tf.Variable([0.1, -0.2, 0.05], name="b")
def forward():
    h = tf.add(tf.matmul(x, W), b, name="h")
    return {"h": h, "y": tf.tanh(h, name="y")}
""",
    "conv": """
img = tf.reshape(tf.sin(tf.range(72, dtype=tf.float32)), [1, 6, 6, 2])
K = tf.Variable(tf.reshape(tf.cos(tf.range(72, dtype=tf.float32)), [3, 3, 2, 4]) * 0.3, name="K")
def forward():
    c = tf.nn.conv2d(img, K, strides=1, padding="SAME", name="h")
    return {"h": c, "y": tf.nn.softplus(c, name="y")}
""",
    "gather": """
E = tf.Variable(tf.reshape(tf.range(30, dtype=tf.float32) / 7.0, [10, 3]), name="E")
ids = tf.constant([1, 3, 3, 7])
def forward():
    g = tf.gather(E, ids, name="h")
    return {"h": g, "y": tf.tanh(g * 0.5, name="y")}
""",
    "while": """
w = tf.Variable([0.9, -0.4, 0.3], name="w")
v0 = tf.constant([1.0, 2.0, -1.0])
def forward():
    _, v = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.sin(v * w) + v), (0, v0))
    h = tf.identity(v, name="h")
    return {"h": h, "y": tf.tanh(h, name="y")}
""",
}
VARIABLE = {"dense": "W", "conv": "K", "gather": "E", "while": "w"}
TAIL = """
def loss():
    return tf.reduce_sum(forward()["y"] ** 2)


if __name__ == "__main__":
    with tf.GradientTape() as tape:
        value = tf.reduce_sum(forward()["y"] ** 2)
    tape.gradient(value, tape.watched_variables())
"""


def case_script(tmp_path_factory, name: str) -> str:
    path = tmp_path_factory.getbasetemp() / f"jac_{name}.py"
    if not path.exists():
        path.write_text("import tensorflow as tf\n" + CASES[name] + TAIL)
    return str(path)


_sessions: dict = {}


def session_for(tmp_path_factory, name: str, mode: str):
    key = (name, mode)
    if key not in _sessions:
        from tfviz.analysis.diagnose import analysis
        from tfviz.jacobian.session import Session

        _sessions[key] = Session.from_analysis(
            analysis(case_script(tmp_path_factory, name), run=mode == "program")
        )
    return _sessions[key]


def reference(script: str, of: str, wrt: str) -> np.ndarray:
    """tape.jacobian, computed independently from a fresh run of the script."""
    import tensorflow as tf

    ns = runpy.run_path(script)
    with tf.GradientTape(persistent=True) as tape:
        out = ns["forward"]()
        out["target"] = tf.reduce_sum(out["y"] ** 2)
    source = ns[wrt] if wrt in ns else out[wrt]
    return tape.jacobian(out[of], source).numpy()


@pytest.mark.parametrize("mode", ["target", "program"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_equal_tape_jacobian(tmp_path_factory, name, mode):
    session = session_for(tmp_path_factory, name, mode)
    script = case_script(tmp_path_factory, name)
    var = VARIABLE[name]
    for of, wrt in (("y", var), ("target", var), ("y", "h")):
        want = reference(script, of, wrt)
        for how in ("reverse", "forward"):
            j = session.jacobian(of, wrt, mode=how)
            assert j.status == "ok", j.message
            got = j.array()
            assert got.shape == want.shape, (of, wrt, how)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{of} {wrt} {how}")


PYTHON_NAMES = (
    """
import tensorflow as tf
x = tf.constant([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]])
W = tf.Variable(tf.reshape(tf.range(6, dtype=tf.float32) / 5.0 - 0.4, [3, 2]), name="W")
b = tf.Variable([0.1, -0.2], name="b")
dense = tf.keras.layers.Dense(2, kernel_initializer="ones")
def forward():
    pre = tf.matmul(x, W) + b
    act = tf.nn.softplus(
        pre * 2.0
    )
    q, r = tf.linalg.qr(tf.reshape(act, [2, 2]) + tf.eye(2))
    h = act
    for _ in range(2):
        h = tf.tanh(h * 0.5 + b)
    logits = dense(h)
    return {"pre": pre, "act": act, "q": q, "r": r, "h": h, "logits": logits, "y": logits}
"""
    + TAIL
)


@pytest.mark.parametrize("mode", ["target", "program"])
def test_tensors_named_as_the_code_names_them_equal_tape_jacobian(tmp_path_factory, mode):
    """``--of pred`` for ``pred = tf.matmul(x, w) + b``: the value the statement assigned,
    checked against TensorFlow's tape.jacobian of the script's own variable: a multi-line
    statement, a tuple of an op's outputs, a name a loop assigns again (its last value) and a
    Keras layer's output."""
    from tfviz.jacobian.session import Session

    script = tmp_path_factory.getbasetemp() / "jac_python_names.py"
    if not script.exists():
        script.write_text(PYTHON_NAMES)
    key = ("python_names", mode)
    if key not in _sessions:
        from tfviz.analysis.diagnose import analysis

        _sessions[key] = Session.from_analysis(analysis(str(script), run=mode == "program"))
    session = _sessions[key]
    assert {"pre", "act", "q", "r", "h", "logits"} <= set(session.names())
    for of, wrt in (
        ("pre", "W"),
        ("pre", "b"),
        ("act", "b"),
        ("q", "W"),
        ("r", "b"),
        ("h", "b"),
        ("logits", "W"),
    ):
        want = reference(str(script), of, wrt)
        j = session.jacobian(of, wrt)
        assert j.status == "ok", j.message
        assert j.of.name == of
        np.testing.assert_allclose(j.array(), want, rtol=1e-5, atol=1e-5, err_msg=f"{of} {wrt} {mode}")


def test_a_name_assigned_in_a_traced_loop_names_the_loop_to_take_it_from(tmp_path):
    """AutoGraph's ``for _ in tf.range(3): h = ...``: after the loop ``h`` is an output of the
    loop's op, which no statement assigns; the answer says so and offers that op's outputs,
    one of which is TensorFlow's ``h``."""
    import tensorflow as tf

    from tfviz.analysis.diagnose import analysis
    from tfviz.jacobian.data import JacobianError
    from tfviz.jacobian.session import Session

    script = tmp_path / "traced_loop.py"
    script.write_text(
        "import tensorflow as tf\n"
        "W = tf.Variable([[0.5, -0.2], [0.1, 0.3]], name='W')\n"
        "x = tf.constant([[1.0, 2.0]])\n"
        "@tf.function\n"
        "def forward():\n"
        "    h = x\n"
        "    for _ in tf.range(3):\n"
        "        h = tf.tanh(tf.matmul(h, W))\n"
        "    return h\n"
        "def loss():\n"
        "    return tf.reduce_sum(forward() ** 2)\n"
    )
    session = Session.from_analysis(analysis(str(script)))
    with pytest.raises(JacobianError) as err:
        session.jacobian("h", "W")
    assert err.value.kind == "not_found"
    assert (
        "'h' is assigned inside the body of '" in err.value.message
        and "traced_loop.py:8" in err.value.message
    )
    offered = err.value.extra["candidates"]
    assert offered
    ns = runpy.run_path(str(script))
    with tf.GradientTape() as tape:
        h = ns["forward"]()
    want = tape.jacobian(h, ns["W"]).numpy()
    got = [session.jacobian(c, "W") for c in offered]
    assert any(j.status == "ok" and np.allclose(j.array(), want, rtol=1e-5, atol=1e-6) for j in got)


def test_auto_mode_picks_the_smaller_side(tmp_path_factory):
    session = session_for(tmp_path_factory, "conv", "target")
    assert session.jacobian("target", "K").mode == "reverse"  # 1 output, 72 inputs
    assert session.jacobian("y", "K").mode == "forward"  # 144 outputs, 72 inputs


def test_memory_guard_refuses_with_size_and_slices(tmp_path_factory):
    from tfviz.jacobian.data import JacobianError

    session = session_for(tmp_path_factory, "conv", "target")
    with pytest.raises(JacobianError) as err:
        session.jacobian("y", "K", budget=4000)
    e = err.value.to_dict()
    assert e["kind"] == "too_big" and e["size_bytes"] == 144 * 72 * 4 and e["budget_bytes"] == 4000
    assert "40.5 KiB" in e["message"]
    assert all(o["bytes"] <= 4000 for o in e["offers"])
    offer = next(o for o in e["offers"] if o.get("out_range"))  # structured slices come first
    part = session.jacobian("y", "K", budget=4000, out_range=offer["out_range"], in_range=offer["in_range"])
    full = session.jacobian("y", "K").array().reshape(144, 72)
    (o0, o1), (i0, i1) = offer["out_range"], offer["in_range"]
    np.testing.assert_allclose(part.array(), full[o0:o1, i0:i1], rtol=1e-6)


def test_chunks_report_progress_and_cancel(tmp_path_factory, monkeypatch):
    from tfviz.jacobian import compute
    from tfviz.jacobian.data import JacobianError

    session = session_for(tmp_path_factory, "dense", "target")
    monkeypatch.setattr(compute, "CHUNK_BYTES", 12 * 4 * 2)  # two rows of J(y, W) per chunk
    seen = []
    j = session.jacobian("y", "W", mode="reverse", progress=lambda k, n: seen.append((k, n)))
    assert seen == [(1, 3), (2, 3), (3, 3)] and j.chunks == 3
    np.testing.assert_allclose(j.array(), session.jacobian("y", "W", mode="forward").array(), rtol=1e-6)
    with pytest.raises(JacobianError) as err:
        session.jacobian(
            "y",
            "W",
            mode="reverse",
            cancelled=lambda: len(seen) >= 4,
            progress=lambda k, n: seen.append((k, n)),
        )
    assert err.value.kind == "cancelled"


NO_PATH = """
import tensorflow as tf
a = tf.Variable([1.0, 2.0], name="a")
c = tf.Variable([3.0, 4.0], name="c")
def loss():
    r = tf.round(a * 2.0, name="rounded")
    side = tf.square(c, name="side")
    return tf.reduce_sum(r * c, name="total") + tf.reduce_sum(tf.sin(a)) * 0.0 + tf.reduce_sum(side)
"""


def test_no_path_and_cut_answers(tmp_path):
    from tfviz.analysis.diagnose import analysis
    from tfviz.jacobian.session import Session

    script = tmp_path / "cuts.py"
    script.write_text(NO_PATH)
    session = Session.from_analysis(analysis(str(script)))
    j = session.jacobian("side", "a")
    assert j.status == "no_path" and j.values is None and "does not depend" in j.message
    j = session.jacobian("total", "a")
    assert j.status == "cut" and j.values is None
    assert j.cut.op == "rounded" and j.cut.op_type == "Round" and j.cut.kind == "not_differentiable"


def test_bad_names_get_close_matches(tmp_path_factory):
    from tfviz.jacobian.data import JacobianError

    session = session_for(tmp_path_factory, "dense", "target")
    with pytest.raises(JacobianError) as err:
        session.jacobian("yy", "W")
    assert err.value.kind == "not_found" and "y" in err.value.extra["candidates"]


def test_nested_body_tensor_is_not_reachable(tmp_path_factory):
    from tfviz.jacobian.data import JacobianError

    session = session_for(tmp_path_factory, "while", "target")
    inner = next(n for n in session.names() if "#body/" in n)
    with pytest.raises(JacobianError) as err:
        session.jacobian(inner, "w")
    assert err.value.kind == "not_reachable" and "while" in err.value.message.lower()


def test_seed3_chain_rule_split():
    from tfviz.analysis.diagnose import analysis
    from tfviz.jacobian.session import Session

    done = analysis(str(EXAMPLES / "seed3_chain_rule_split.py"))
    report, session = done.report, Session.from_analysis(done)
    assert report.ok and {v.name: v.status for v in report.variables} == {"W": "connected", "b": "connected"}
    split = session.chain("y", "W", "h")
    assert split.max_abs_diff < 1e-5
    assert split.j_yh.array().shape == (1, 3, 1, 3) and split.j_hx.array().shape == (1, 3, 4, 3)
    assert split.product.to_numpy().shape == split.j_yx.array().shape == (1, 3, 4, 3)
    assert split.tf_gradients.to_numpy().shape == (4, 3) and split.tf_gradients_diff < 1e-6
    from tfviz.jacobian.data import ChainSplit

    again = ChainSplit.from_dict(json.loads(json.dumps(split.to_dict())))
    np.testing.assert_array_equal(again.j_yx.array(), split.j_yx.array())


def test_worker_keeps_the_session_and_answers_requests():
    requests = [
        {"cmd": "analyze", "script": str(EXAMPLES / "seed3_chain_rule_split.py"), "keep": True},
        {"cmd": "jacobian", "id": "a", "of": "y", "wrt": "W"},
        {"cmd": "jacobian", "id": "b", "of": "y", "wrt": "W", "via": "h", "encoding": "list"},
        {"cmd": "jacobian", "id": "c", "of": "y", "wrt": "W", "budget_mb": 1e-6},
        {"cmd": "jacobian", "id": "d", "wrt": 3},
        {"cmd": "names", "id": "e"},
    ]
    r = subprocess.run(
        worker_command(),
        env=worker_environment(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        input="".join(json.dumps(q) + "\n" for q in requests),
    )
    assert r.returncode == 0, r.stderr[-2000:]
    msgs = [json.loads(line) for line in r.stdout.splitlines()]
    by_id = {m.get("id"): m for m in msgs if m["type"] in ("jacobian", "jacobian_error", "names")}
    assert [m["type"] for m in msgs].index("result") < [m["type"] for m in msgs].index("jacobian")
    from tfviz.jacobian.data import ChainSplit, Jacobian

    j = Jacobian.from_dict(by_id["a"]["result"])
    assert j.status == "ok" and j.array().shape == (1, 3, 4, 3)
    assert by_id["b"]["chain"]["j_yx"]["values"]["encoding"] == "list"
    assert ChainSplit.from_dict(by_id["b"]["chain"]).max_abs_diff < 1e-5
    assert by_id["c"]["error"]["kind"] == "too_big" and by_id["c"]["error"]["offers"]
    assert by_id["d"]["error"]["kind"] == "bad_request"
    assert "h" in by_id["e"]["names"]
    assert any(m["type"] == "jacobian_progress" and m["id"] == "a" for m in msgs)


def test_worker_without_keep_still_exits_after_the_result():
    request = {"cmd": "analyze", "script": str(EXAMPLES / "seed3_chain_rule_split.py")}
    proc = subprocess.Popen(
        worker_command(),
        env=worker_environment(),
        cwd=ROOT,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    proc.stdin.write(json.dumps(request) + "\n")
    proc.stdin.flush()  # stdin stays open: the worker must end on its own
    assert proc.wait(timeout=300) == 0
    assert json.loads(proc.stdout.read().splitlines()[-1])["type"] == "result"
    proc.stdin.close()


def _cli(*args, cwd=EXAMPLES):
    """``tfviz jacobian``, through the installed command as a user runs it."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("tfviz")), "jacobian", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_writes_npy_equal_to_tape_jacobian(tmp_path):
    import tensorflow as tf

    out = tmp_path / "j.npy"
    r = _cli("seed3_chain_rule_split.py", "--of", "y", "--wrt", "W", "-o", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    ns = runpy.run_path(str(EXAMPLES / "seed3_chain_rule_split.py"))
    with tf.GradientTape() as tape:
        y = tf.tanh(tf.matmul(ns["x"], ns["W"]) + ns["b"])
    # two computations of the same float32 values (the worker's, traced, and this eager one):
    # oneDNN sums in its own order, a few units in the last place apart
    np.testing.assert_allclose(np.load(out), tape.jacobian(y, ns["W"]).numpy(), rtol=1e-5)


def test_cli_via_png_csv_and_bad_names(tmp_path):
    png, csv = tmp_path / "j.png", tmp_path / "j.csv"
    r = _cli("seed3_chain_rule_split.py", "--of", "y", "--wrt", "W", "--via", "h", "-o", str(png))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "max |J(y,h) @ J(h,x) - J(y,x)|" in r.stdout and "tf.gradients(y, x): shape (4, 3)" in r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = _cli("seed3_chain_rule_split.py", "--wrt", "b", "-o", str(csv))
    assert r.returncode == 0 and np.loadtxt(csv, delimiter=",").shape == (3,)
    r = _cli("seed3_chain_rule_split.py", "--of", "yy", "--wrt", "W")
    assert r.returncode == 2 and "close matches: y" in r.stderr


def test_a_loop_tensorflow_wrapped_to_differentiate_it_is_reached_in_the_trace_again(tmp_path):
    """Differentiated under a tape in a ``tf.function``, an AutoGraph loop is rewritten and
    wrapped in a call op (``while/StatefulPartitionedCall``); traced again for the Jacobian it
    is the plain ``while``. The name ``h``, assigned in the loop, is answered with the wrapper's
    outputs, and the one that is ``h`` has TensorFlow's own Jacobian."""
    import tensorflow as tf

    program = ROOT / "tests" / "programs" / "jacobian" / "traced_loop_rnn.py"
    r = _cli(str(program), "--of", "h", "--wrt", "W", cwd=tmp_path)
    assert (
        r.returncode == 2 and "'h' is assigned inside the body of 'while/StatefulPartitionedCall'" in r.stderr
    )
    offered = r.stderr.split("close matches: ", 1)[1].split()[0].rstrip(",")
    out = tmp_path / "j.npy"
    r = _cli(str(program), "--of", offered, "--wrt", "W", "-o", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    ns = runpy.run_path(str(program), run_name="reference")  # its variables as the step reads them
    with tf.GradientTape(persistent=True) as tape:
        h = tf.function(ns["forward"])()
    want = tape.jacobian(h, ns["W"], experimental_use_pfor=False).numpy()
    np.testing.assert_allclose(np.load(out), want, rtol=1e-5, atol=1e-6)
