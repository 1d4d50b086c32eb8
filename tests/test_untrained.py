"""Variables the loss reads but training never updates (not_trained), and
separate models read on purpose (read_not_trained).

Ground truth: tests/update_truth.py runs each program's real optimizer update
and reports which variables changed. A not_trained variable must not change;
a separate model read on purpose is the only thing left unchanged in the
healthy controls. Both sides run in fresh processes, so Keras names agree.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forkserver
from tests.conftest import EXAMPLES, ROOT

BROKEN = [
    "untrained_raw_variable.py",
    "untrained_list_append.py",
    "untrained_forgotten_decoder.py",
    "untrained_wrong_zip.py",
]
HEALTHY = [
    ("healthy_dqn_target.py", 1, 1),
    ("healthy_distillation.py", 1, 1),
    # (program, tfviz step, optimizer update): update 2 is the generator step
    ("healthy_gan_generator.py", 2, 2),
]


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return forkserver.run(cmd, timeout=900, cwd=ROOT)  # the oracle forked, tfviz as a process


def check(name: str, step: int = 1) -> tuple[int, dict]:
    done = _run(
        [sys.executable, "-m", "tfviz.cli", "check", str(EXAMPLES / name), "--json", "--step", str(step)]
    )
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return done.returncode, json.loads(done.stdout)


def truth(name: str, update: int = 1) -> dict:
    done = _run(
        [
            sys.executable,
            str(ROOT / "tests" / "update_truth.py"),
            str(EXAMPLES / name),
            "--update",
            str(update),
        ]
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _key(name: str) -> str:
    return name.split(":")[0]


def same(ours: str, theirs: dict) -> bool:
    """A Keras path is prefixed by the model that built the layer, which differs
    with where the first call happened: compare on the common tail."""
    o = _key(ours)
    for t in filter(None, (theirs.get("path"), _key(theirs["name"]))):
        if o == t or o.endswith("/" + t) or t.endswith("/" + o):
            return True
    return False


def matched(names: list[str], variables: list[dict]) -> list[dict]:
    out = []
    for n in names:
        hits = [v for v in variables if same(n, v)]
        assert len(hits) == 1, (n, [v.get("path") or v["name"] for v in variables])
        out.append(hits[0])
    return out


@pytest.mark.parametrize("name", BROKEN)
def test_not_trained_variables_are_the_ones_the_update_leaves_unchanged(name):
    code, report = check(name)
    t = truth(name)
    assert code == 1
    flagged = [v for v in report["variables"] if v["kind"] == "not_trained"]
    assert flagged
    assert all(not v["changed"] for v in matched([v["tf_name"] for v in flagged], t["variables"]))
    others = [v["tf_name"] for v in report["variables"] if v["kind"] is None]
    assert all(v["changed"] for v in matched(others, t["variables"]))
    assert len(flagged) == len(t["unchanged"])
    problems = [p for p in report["problems"] if p["kind"] == "not_trained"]
    assert {n for p in problems for n in p["variables"]} == {v["name"] for v in flagged}
    for p in problems:  # names the variable, why, and the line that created it
        assert p["severity"] == "error" and p["source"] and p["source"]["line"] > 0
        assert "training never updates it" in p["message"]


@pytest.mark.parametrize("name,step,update", HEALTHY)
def test_separate_models_read_on_purpose_raise_no_problem(name, step, update):
    code, report = check(name, step)
    t = truth(name, update)
    assert code == 0 and report["ok"], report["problems"]
    assert not [v for v in report["variables"] if v["kind"] == "not_trained"]
    separate = report["read_not_trained"]
    assert separate and all("separate model" in r["reason"] for r in separate)
    # what tfviz lists as read but not trained is exactly what the real update leaves alone
    assert len(separate) == len(t["unchanged"])
    by_name = {v["name"]: v["tf_name"] for v in report["variables"]}
    assert all(v["changed"] for v in matched(list(by_name.values()), t["variables"]))


def test_untracked_variable_in_a_loss_target_is_a_warning(tmp_path):
    from tfviz.analysis.diagnose import analyze

    script = tmp_path / "raw.py"
    script.write_text(
        "import tensorflow as tf\nimport keras\n\n\nclass Scale(keras.layers.Layer):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.gain = tf.Variable(2.0)\n\n    def call(self, x):\n        return x * self.gain\n\n\n"
        "layer = Scale()\nx = tf.ones([3])\n\n\ndef loss():\n    return tf.reduce_sum(layer(x))\n"
    )
    report = analyze(str(script))
    (v,) = [v for v in report.variables if v.name == "layer.gain"]
    assert (v.status, v.kind) == ("connected", "not_trained")  # loss() itself does differentiate it
    (p,) = [p for p in report.problems if p.kind == "not_trained"]
    assert p.severity == "warning" and "add_weight" in p.message and p.source.line == 8


def test_the_exports_mark_a_variable_never_trained_in_the_windows_colour(tmp_path):
    """The engine marks not_trained in the graph document itself: DOT and GraphML carry it,
    in the colour the window draws it with, through the installed command."""
    import networkx as nx

    from tfviz.palette import STYLES

    tfviz = Path(sys.executable).with_name("tfviz")
    if not tfviz.exists():
        pytest.skip("the tfviz command is not installed")
    out = tmp_path / "graph.graphml"
    done = _run([str(tfviz), "export", str(EXAMPLES / "untrained_raw_variable.py"), "-o", str(out)])
    assert done.returncode == 1 and "gradient problems found" in done.stdout, done.stderr[-3000:]
    g = nx.read_graphml(out)
    marked = {n: d for n, d in g.nodes(data=True) if d.get("status") == "not_trained"}
    assert any(d.get("is_variable") for d in marked.values()), sorted(marked)
    assert {d["color"] for d in marked.values()} == {STYLES["not_trained"].color}
    passes = [d for _, _, d in g.edges(data=True) if d.get("status") == "passes"]
    assert passes and {d["color"] for d in passes} == {STYLES["passes"].color}  # green, as drawn
