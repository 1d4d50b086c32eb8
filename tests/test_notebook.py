"""A Jupyter notebook checked as it is: its code cells run top to bottom as one program,
IPython lines skipped with a note, every line said by its cell; verdicts against TensorFlow."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from tests.conftest import EXAMPLES, ROOT
from tests.test_program_mode import theirs, truth

TFVIZ = Path(sys.executable).with_name("tfviz")
SEED2 = EXAMPLES / "notebook_seed2_fit.ipynb"


def _check(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TFVIZ), "check", str(path), *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )


def _as_script(path: Path, out: Path) -> Path:
    """The notebook as a script, made here without tfviz: code cells joined, IPython lines
    and a ``%%`` line left out (the oracle's own reading of the notebook)."""
    cells = nbformat.read(str(path), as_version=4).cells
    lines = [
        ln
        for c in cells
        if c.cell_type == "code"
        for ln in c.source.splitlines()
        if not ln.lstrip().startswith(("%", "!"))
    ]
    out.write_text("\n".join(lines) + "\n")
    return out


def test_seed2_notebook_names_the_frozen_copy_at_its_cell_and_agrees_with_tensorflow(tmp_path):
    done = _check(SEED2, "--json")
    assert done.returncode == 1, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    (p,) = [p for p in doc["problems"] if p["kind"] == "frozen_copy"]
    cells = nbformat.read(str(SEED2), as_version=4).cells
    src = p["source"]
    cell_text = cells[src["cell"]].source.splitlines()
    assert "tf.reshape" in cell_text[src["cell_line"] - 1] and "tf.reshape" in src["code"]
    assert src["cell_name"] == f"cell {src['cell'] + 1} [{cells[src['cell']].execution_count}]"
    assert f"notebook_seed2_fit.ipynb {src['cell_name']}, line {src['cell_line']}" in p["message"]
    # each IPython line that did not run is named, with its cell and line
    notes = "\n".join(doc["notes"])
    for line in ("!pip install tensorflow", "%matplotlib inline", "%%time"):
        assert f"skipped IPython syntax `{line}`" in notes
    assert "cell 2 [1], line 1" in notes
    # TensorFlow's verdict, on the notebook read without tfviz
    from tfviz.report import Report

    report = Report.from_dict(doc)
    ours = {v.tf_name.split(":")[0].split("/", 1)[-1]: v.status for v in report.variables}
    t = theirs(truth(_as_script(SEED2, tmp_path / "seed2.py"), prebuild=True))
    assert {k.split("/", 1)[-1]: s for k, s in t.items()} == ours


def test_the_text_report_says_cells_and_what_was_skipped():
    done = _check(SEED2)
    assert done.returncode == 1
    assert (
        "note: notebook_seed2_fit.ipynb cell 2 [1], line 2: skipped IPython syntax `%matplotlib inline`"
        in done.stdout
    )
    assert "error frozen_copy" in done.stdout and "notebook_seed2_fit.ipynb cell 3 [2], line" in done.stdout


def test_a_syntax_error_names_its_cell_and_line(tmp_path):
    nb = new_notebook(
        cells=[
            new_code_cell("import tensorflow as tf\nw = tf.Variable(1.0)"),
            new_code_cell("def loss():\n    return w * 2 +\n", execution_count=3),
        ]
    )
    path = tmp_path / "broken.ipynb"
    nbformat.write(nb, str(path))
    done = _check(path, "--json")
    assert done.returncode == 2
    err = json.loads(done.stdout)["error"]
    assert (err["cell"], err["cell_line"], err["cell_name"]) == (1, 2, "cell 2 [3]")
    assert err["code"] == "return w * 2 +"  # the cell's line, not the notebook's JSON
    plain = _check(path)
    assert "broken.ipynb cell 2 [3], line 2: syntax error" in plain.stderr


def test_a_cell_that_raises_is_named_and_a_file_that_is_no_notebook_is_refused(tmp_path):
    nb = new_notebook(
        cells=[
            new_code_cell("import tensorflow as tf"),
            new_code_cell("x = 1\nraise RuntimeError('no data here')", execution_count=2),
        ]
    )
    path = tmp_path / "raises.ipynb"
    nbformat.write(nb, str(path))
    done = _check(path)
    assert done.returncode == 2 and "raises.ipynb cell 2 [2], line 2" in done.stderr
    assert "no data here" in done.stderr and "Traceback" not in done.stderr.split("\n")[0]
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json")
    done = _check(bad)
    assert done.returncode == 2 and "not a Jupyter notebook" in done.stderr


def test_a_shell_cell_is_left_out_and_cells_run_out_of_order_are_run_in_order():
    from tfviz.script.notebook import join

    cells = [
        new_code_cell("%%bash\necho hi\nls", execution_count=3),
        new_code_cell("x = 1", execution_count=1),
        new_code_cell("tf.reduce_sum?", execution_count=2),
    ]
    nb = join("/x/nb.ipynb", cells)
    assert nb.source.splitlines()[:3] == ["", "", ""]  # the shell cell, line for line, blank
    assert nb.source.splitlines()[4].strip().startswith("pass")  # ``x?``: IPython help
    notes = nb.notes()
    assert "nb.ipynb cell 1 [3], line 1: skipped IPython syntax `%%bash`" in notes
    assert any("run out of order" in n and "top to bottom" in n for n in notes)
    assert not join("/x/nb.ipynb", cells[1:2]).out_of_order
    assert join("/x/nb.ipynb", [new_code_cell("z = 1  # really?")]).source == "z = 1  # really?\n"


def test_export_and_jacobian_take_a_notebook_and_display_is_defined(tmp_path):
    import numpy as np

    src = (EXAMPLES / "seed3_chain_rule_split.py").read_text().split('if __name__ == "__main__":')[0]
    shown = new_code_cell("display(W)  # IPython's builtin\n%time loss()", execution_count=2)
    nb = new_notebook(cells=[new_code_cell(src, execution_count=1), shown])
    path = tmp_path / "seed3.ipynb"
    nbformat.write(nb, str(path))
    out = tmp_path / "seed3.json"
    done = subprocess.run(
        [str(TFVIZ), "export", str(path), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["ok"] and doc["target"] == "loss" and "<tf.Variable 'W:0'" in doc["stdout"]
    assert any("`%time loss()`" in n for n in doc["notes"])
    j = tmp_path / "j.npy"
    done = subprocess.run(
        [str(TFVIZ), "jacobian", str(path), "--of", "y", "--wrt", "b", "-o", str(j)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert np.load(j).shape == (1, 3, 3)


def test_a_watched_notebook_keeps_the_watch_notes_beside_its_own(tmp_path):
    """A notebook's notes (IPython syntax skipped) are said together with the watch's (an XLA
    step run without XLA while watched): they used to replace them."""
    nb = new_notebook(
        cells=[
            new_code_cell("%matplotlib inline\nimport tensorflow as tf", execution_count=1),
            new_code_cell(
                "w = tf.Variable([1.0, 2.0])\nx = tf.constant([3.0, 4.0])\n"
                "opt = tf.keras.optimizers.SGD(0.01)",
                execution_count=2,
            ),
            new_code_cell(
                "@tf.function(jit_compile=True)\ndef step():\n    with tf.GradientTape() as tape:\n"
                "        loss = tf.reduce_sum((w * x) ** 2)\n"
                "    opt.apply_gradients([(tape.gradient(loss, w), w)])\n"
                "    return loss\n\nfor _ in range(3):\n    step()",
                execution_count=3,
            ),
        ]
    )
    path = tmp_path / "jit.ipynb"
    nbformat.write(nb, str(path))
    done = _check(path, "--until", "nan", "--max-steps", "2")
    assert done.returncode == 0, done.stderr
    notes = [ln for ln in done.stdout.splitlines() if ln.startswith("note: ")]
    assert notes == [
        "note: jit.ipynb cell 1 [1], line 1: skipped IPython syntax `%matplotlib inline`",
        "note: step is compiled with XLA (jit_compile=True); while watched it ran without XLA,"
        " since XLA cannot run tfviz's per-step check",
    ]


#: cells as people write them, with every form of IPython syntax the transformer knows
IPYTHON_CELLS = [
    "\n%%writefile cleanup.py\nimport os\nos.remove('x')\n",  # a cell magic after a blank line
    "%%time\nx = 1\ny = x + 1",
    "%%time\n!ls\nz = 3",  # IPython syntax inside a Python cell magic's body
    "  \n%%bash\necho hi",
    "%matplotlib inline\nimport numpy as np",
    "files = !ls\nprint(files)",  # a shell command's output as a value
    "x = %time f()\n",
    "model?\n??model\nhelp(len)",
    "!pip install x\nif True:\n    %time f()\n    y = 2",
    "%time f(a, \\\n   b)\nz = 1",  # a magic continued onto the next line
    "print('%%not magic, a string')\n",
    ">>> a = 1\n>>> b = a * 2",  # a pasted doctest prompt, which IPython strips
    "In [3]: c = 5\n",
    "def f():\n    return 1  # %not a magic in a comment\n",
]


def _what_ipython_runs(cell: str) -> list[str]:
    """The oracle: the lines IPython's transformer makes of ``cell`` that are Python of the
    cell's own (its calls into IPython left out), a Python cell magic's body included."""
    import ast

    from IPython.core.inputtransformer2 import TransformerManager

    out = TransformerManager().transform_cell(cell)
    if out.lstrip().startswith("get_ipython().run_cell_magic("):
        name, _, body = (a.value for a in ast.parse(out).body[0].value.args)
        return _what_ipython_runs(body) if name in ("time", "timeit", "capture", "prun", "debug") else []
    return [ln for ln in out.splitlines() if ln.strip() and "get_ipython()" not in ln]


def test_what_a_cell_runs_is_what_ipythons_transformer_makes_of_it():
    from tfviz.script.notebook import _python_lines

    for cell in IPYTHON_CELLS:
        skipped: list = []
        ours = _python_lines(0, cell.split("\n"), skipped)
        assert len(ours) == len(cell.split("\n")), cell  # line for line: cell lines stay where they are
        kept = [ln for ln in ours if ln.strip() and "skipped by tfviz" not in ln]
        assert kept == _what_ipython_runs(cell), cell
        # each note names the cell's own line that did not run as written, and each line
        # left out is noted
        lines = cell.split("\n")
        assert all(lines[n - 1].strip() == text.strip() for _, n, text in skipped), (cell, skipped)
        placeholders = {i for i, ln in enumerate(ours, 1) if "skipped by tfviz" in ln}
        assert placeholders <= {n for _, n, _ in skipped}, (cell, skipped)


def test_a_cell_magic_after_a_blank_line_runs_nothing(tmp_path):
    """Jupyter writes the file and runs none of the cell; tfviz runs none of it either."""
    nb = new_notebook(
        cells=[
            new_code_cell(
                "import tensorflow as tf\nw = tf.Variable(2.0)\n\n\ndef loss():\n    return w * w\n"
            ),
            new_code_cell("\n%%writefile cleanup.py\nopen('marker.txt', 'w').write('ran')\n"),
        ]
    )
    path = tmp_path / "magic.ipynb"
    nbformat.write(nb, str(path))
    done = subprocess.run(
        [str(TFVIZ), "check", str(path)], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "marker.txt").exists() and not (tmp_path / "cleanup.py").exists()
    assert "%%writefile" in done.stdout  # noted as not run


def test_the_fast_path_for_plain_cells_agrees_with_the_transformer(monkeypatch):
    """A cell with nothing IPython acts on skips its transformer: for every cell here, plain
    or not, the answer is the one the transformer alone gives."""
    from tfviz.script import notebook

    plain = ["import numpy as np\nx = np.ones(3)", "def f(a):\n    return a * 2\n\n\n", "y = [1, 2][0]"]
    for cell in IPYTHON_CELLS + plain:
        answers = []
        for fast in (True, False):
            monkeypatch.setattr(notebook, "FAST_PLAIN_CELLS", fast)
            skipped: list = []
            answers.append((notebook._python_lines(0, cell.split("\n"), skipped), skipped))
        assert answers[0] == answers[1], cell
    assert all(notebook._plainly_python(c.split("\n")) for c in plain)


def test_a_traced_target_keeps_the_cells_lines_and_says_a_read_out_by_its_cell(tmp_path):
    """AutoGraph, converting a notebook's function for a trace, had Python read the notebook's
    file again from disk: every code line after that was the notebook's JSON (``"source": [``).
    A ``loss()`` that reads its prediction out cannot be traced, so it went there. Its problem
    now shows the cell's own line, and says where the values stop and where they are read
    out by cell. TensorFlow gives ``w`` None."""
    import numpy as np
    import tensorflow as tf

    setup = (
        "import numpy as np\nimport tensorflow as tf\nw = tf.Variable([[1.0], [2.0]])\nx = tf.ones([3, 2])"
    )
    body = (
        "def loss():\n    pred = tf.matmul(x, w)\n    values = pred.numpy()\n"
        "    return tf.constant(np.mean(values**2))"
    )
    scope: dict = {}
    exec(setup + "\n" + body, scope)  # noqa: S102 - the cells, as Python runs them one after another
    with tf.GradientTape() as tape:
        value = scope["loss"]()
    assert tape.gradient(value, scope["w"]) is None and np.isfinite(value.numpy())  # TensorFlow
    path = tmp_path / "readout.ipynb"
    nbformat.write(
        new_notebook(cells=[new_code_cell(setup), new_code_cell(body, execution_count=2)]), str(path)
    )
    done = _check(path, "--json")
    assert done.returncode == 1, done.stderr
    (p,) = json.loads(done.stdout)["problems"]
    assert (p["kind"], p["severity"], p["source"]["code"]) == ("not_read", "error", "values = pred.numpy()")
    assert (p["source"]["cell_name"], p["source"]["cell_line"]) == ("cell 2 [2]", 3)
    assert (
        "end at MatMul 'MatMul' (readout.ipynb cell 2 [2], line 2), read out into Python at"
        " readout.ipynb cell 2 [2], line 3 (.numpy())"
    ) in p["message"]
