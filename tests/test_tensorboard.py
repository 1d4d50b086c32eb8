"""``tfviz check --until COND --record DIR/``: TensorBoard event files, read back with
TensorBoard's own reader, hold per layer the figures the CSV record holds for the same run
(itself checked against TensorFlow in test_watch), and a histogram of each variable's gradient."""

from __future__ import annotations

import csv
import math
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT
from tfviz import cli

pytest.importorskip("tensorboard")

TFVIZ = str(Path(sys.executable).with_name("tfviz"))
PROGRAM = ROOT / "tests" / "programs" / "record" / "small_fit.py"
STEPS = 6


def _check(record: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TFVIZ, "check", str(PROGRAM), "--until", "nan", "--max-steps", str(STEPS), "--record", record],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


def _events(folder: Path) -> dict[str, dict[int, np.ndarray]]:
    import tensorflow as tf
    from tensorboard.backend.event_processing import plugin_event_accumulator

    acc = plugin_event_accumulator.EventAccumulator(str(folder), size_guidance={"tensors": 0})
    acc.Reload()
    out: dict[str, dict[int, np.ndarray]] = {}
    for tag in acc.Tags()["tensors"]:
        plugin = acc.SummaryMetadata(tag).plugin_data.plugin_name
        expected = "histograms" if tag.startswith("gradients/") else "scalars"
        assert plugin == expected, (tag, plugin)
        out[tag] = {e.step: tf.make_ndarray(e.tensor_proto) for e in acc.Tensors(tag)}
    return out


def test_a_folder_record_is_tensorboards_and_agrees_with_the_csv(tmp_path):
    r = _check("tb/", tmp_path)
    assert r.returncode == 0, r.stderr  # no NaN in these steps: --max-steps ends the watch
    c = _check("record.csv", tmp_path)
    assert c.returncode == 0, c.stderr
    events = _events(tmp_path / "tb")
    text = (tmp_path / "record.csv").read_text().splitlines()
    rows = list(csv.reader(ln for ln in text if not ln.startswith("#")))
    header, rows = rows[0], rows[1:]
    grad = defaultdict(float)
    update = defaultdict(float)
    weight = defaultdict(float)
    variables = set()
    for row in rows:
        d = dict(zip(header, row))
        step, name = int(d["step"]), d["variable"]
        layer = name.rsplit("/", 1)[0]  # Keras' path: the model's, the layer's, the variable's name
        variables.add(name)
        for into, key in ((grad, "grad_norm"), (update, "update_norm"), (weight, "weight_norm")):
            if d[key]:
                into[(layer, step)] += float(d[key]) ** 2
    layers = {layer for layer, _ in grad}
    assert layers == {"sequential/hidden", "sequential/out"}
    for (layer, step), g2 in grad.items():
        assert float(events[f"gradient_norm/{layer}"][step]) == pytest.approx(math.sqrt(g2), rel=1e-5)
    for (layer, step), u2 in update.items():
        assert float(events[f"update_norm/{layer}"][step]) == pytest.approx(math.sqrt(u2), rel=1e-5)
        ratio = math.sqrt(u2) / math.sqrt(weight[(layer, step)])
        assert float(events[f"update_ratio/{layer}"][step]) == pytest.approx(ratio, rel=1e-5)
    assert set(events[f"gradient_norm/{layer}"]) == set(range(1, STEPS + 1))
    sizes = {"sequential/hidden/kernel": 48, "sequential/hidden/bias": 8, "sequential/out/kernel": 8}
    sizes["sequential/out/bias"] = 1
    assert variables == set(sizes)
    for name, size in sizes.items():
        steps = events[f"gradients/{name}"]
        assert set(steps) == set(range(1, STEPS + 1))
        for buckets in steps.values():
            assert buckets.shape[1] == 3 and buckets[:, 2].sum() == size  # every element counted
            assert (buckets[:, 0] <= buckets[:, 1]).all()


def test_a_folder_record_without_tensorboard_is_refused_before_the_program_runs(
    tmp_path, monkeypatch, capsys
):
    from tfviz.program import tensorboard

    marker = tmp_path / "ran"
    program = tmp_path / "train.py"
    program.write_text(f"open({str(marker)!r}, 'w').close()\n" + PROGRAM.read_text())
    monkeypatch.setattr(
        tensorboard,
        "missing",
        lambda: "a folder record is written for TensorBoard, which is not installed: " + tensorboard.INSTALL,
    )
    status = cli.main(["check", str(program), "--until", "nan", "--record", str(tmp_path / "runs") + "/"])
    assert status == 2 and not marker.exists()
    err = capsys.readouterr().err
    assert "pip install 'tfviz[tensorboard]'" in err and "runs/" in err
