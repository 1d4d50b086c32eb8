"""``tfviz check``'s text speaks of the layers the user wrote, as the window does: the layer
that holds a problem's op, and the way a cut variable's gradient would have gone, in
layers. Keras' own layer names, read from the script's objects in a fresh process, are the
oracle."""

from __future__ import annotations

import json
import sys

from tests import forkserver
from tests.conftest import EXAMPLES, ROOT
from tests.test_commands import installed, tfviz


def _layers(name: str, model: str) -> list[str]:
    """Keras' names for the layers of ``model`` in the example ``name``, from a fresh process."""
    done = forkserver.run(
        [sys.executable, str(ROOT / "tests" / "layer_names.py"), str(EXAMPLES / name), model], timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    names: list[str] = json.loads(done.stdout.splitlines()[-1])
    return names


def _problem_lines(stdout: str) -> list[str]:
    return stdout.split("\nProblems (", 1)[1].splitlines()


@installed
def test_the_path_of_a_cut_variable_crosses_its_layers_in_order() -> None:
    r = tfviz("check", str(EXAMPLES / "kind_stop_gradient_layer.py"))
    assert r.returncode == 1, r.stderr[-2000:]
    layers = _layers("kind_stop_gradient_layer.py", "encoder")
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
    layer = _layers("seed2_frozen_copy.py", "model")[0]
    head = next(ln for ln in _problem_lines(r.stdout) if ln.startswith("  error frozen_copy"))
    # the copy by the Python path the script holds it at, in the layer whose build() made it
    assert "'model.layers[0].weights2'" in head and f" in layer {layer} " in head, head
    assert "seed2_frozen_copy.py:25" in head


@installed
def test_no_path_is_drawn_to_a_problem_whose_gradient_reaches_the_loss() -> None:
    # the forgotten decoder gets its gradient; the optimizer never applies it: no cut to show
    r = tfviz("check", str(EXAMPLES / "untrained_forgotten_decoder.py"))
    assert r.returncode == 1, r.stderr[-2000:]
    lines = _problem_lines(r.stdout)
    assert any(ln.startswith("  error not_trained") for ln in lines)
    assert not any(ln.strip().startswith("path: ") for ln in lines), "\n".join(lines)
