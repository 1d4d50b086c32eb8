"""``tfviz check``'s text speaks of the layers the user wrote, as the window does: the layer
that holds a problem's op, and the way a cut variable's gradient would have gone, in
layers. Keras' own layer names, read from the script's objects, are the oracle."""

from __future__ import annotations

import os
import runpy
from typing import Any

from tests.conftest import EXAMPLES
from tests.test_commands import installed, tfviz


def _objects(name: str) -> dict[str, Any]:
    """The example's globals after one call of its loss, as Keras names its layers then."""
    cwd = os.getcwd()
    os.chdir(EXAMPLES)
    try:
        ns = runpy.run_path(str(EXAMPLES / name), run_name="tfviz_oracle")
    finally:
        os.chdir(cwd)
    ns["loss"]()
    return ns


def _problem_lines(stdout: str) -> list[str]:
    return stdout.split("\nProblems (", 1)[1].splitlines()


@installed
def test_the_path_of_a_cut_variable_crosses_its_layers_in_order() -> None:
    r = tfviz("check", str(EXAMPLES / "kind_stop_gradient_layer.py"))
    assert r.returncode == 1, r.stderr[-2000:]
    encoder = _objects("kind_stop_gradient_layer.py")["encoder"]
    layers = [layer.name for layer in encoder.layers]
    assert layers == ["enc_1", "enc_2"]
    (path,) = [ln.strip() for ln in _problem_lines(r.stdout) if ln.strip().startswith("path: ")]
    names = path.removeprefix("path: ").split(" › ")
    # from the variable, through each Dense layer in the order the model calls them, to the cut
    assert names[0] == 'encoder.get_layer("enc_1").kernel'
    assert names[1:-1] == layers and names[-1] == "StopGradient"


@installed
def test_a_problem_names_the_layer_that_holds_its_op() -> None:
    r = tfviz("check", str(EXAMPLES / "seed2_frozen_copy.py"))
    assert r.returncode == 1, r.stderr[-2000:]
    layer = _objects("seed2_frozen_copy.py")["model"].layers[0].name
    head = next(ln for ln in _problem_lines(r.stdout) if ln.startswith("  error frozen_copy"))
    # the copy by the Python path the script holds it at, in the layer whose build() made it
    assert "'model.layers[0].weights2'" in head and f" in layer {layer} " in head, head
    assert "seed2_frozen_copy.py:25" in head
