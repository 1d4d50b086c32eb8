"""``tfviz check`` end to end, including bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import EXAMPLES
from tfviz.cli import main

PY = sys.executable


def tfviz(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PY, "-m", "tfviz.cli", *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def test_check_seed1_human_output_names_svd_and_line():
    r = tfviz("check", str(EXAMPLES / "seed1_svd_dynamic_shape.py"))
    assert r.returncode == 1, r.stderr
    assert "unimplemented Svd" in r.stdout
    assert "seed1_svd_dynamic_shape.py:21" in r.stdout
    assert "| s, u, v = tf.linalg.svd(tensor)" in r.stdout
    assert "upper[0]" in r.stdout and "broken" in r.stdout
    # TensorFlow's own log lines stay out of our output.
    assert "cuda" not in r.stderr.lower() and "oneDNN" not in r.stderr


def test_check_json_document_is_stable(tmp_path):
    graph_file = tmp_path / "graph.json"
    r = tfviz("check", str(EXAMPLES / "kind_stop_gradient.py"), "--json", "--graph", str(graph_file))
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert set(doc) >= {
        "tfviz",
        "tensorflow",
        "script",
        "target",
        "ok",
        "variables",
        "problems",
        "graph",
        "timings_s",
    }
    assert doc["ok"] is False and doc["target"] == "loss"
    var_keys = {
        "name",
        "tf_name",
        "dtype",
        "shape",
        "status",
        "kind",
        "grad_norm",
        "blocked_at",
        "explanation",
    }
    assert all(var_keys <= set(v) for v in doc["variables"])
    (p,) = doc["problems"]
    assert {"kind", "severity", "op", "op_type", "message", "variables", "source", "hint"} <= set(p)
    assert p["kind"] == "stop_gradient" and p["source"]["line"] == 10
    assert set(doc["graph"]) == {"ops", "edges", "functions"} and doc["graph"]["ops"] > 5
    full = json.loads(graph_file.read_text())
    assert len(full["graph"]["ops"]) == doc["graph"]["ops"]


def test_check_healthy_exits_zero():
    r = tfviz("check", str(EXAMPLES / "seed3_chain_rule.py"), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ok"] is True


def test_help_does_not_import_tensorflow():
    code = (
        "import sys, tfviz.cli as c\ntry:\n c.main(['--help'])\nexcept SystemExit: pass\n"
        "sys.stderr.write(str('tensorflow' in sys.modules))"
    )
    r = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stderr.strip().endswith("False")
    assert "check" in r.stdout


def _write(tmp_path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def check_error(capsys, path: str, *extra: str) -> str:
    code = main(["check", path, *extra])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    return err


def test_missing_file(capsys, tmp_path):
    err = check_error(capsys, str(tmp_path / "nope.py"))
    assert "no such file" in err and "nope.py" in err


@pytest.mark.parametrize("command", [["check"], ["export", "-o", "graph.png"], []])
def test_a_scripts_own_options_given_before_dashes_are_shown_where_they_go(command, capsys, tmp_path):
    p = _write(tmp_path, "train.py", "print('never run')\n")
    with pytest.raises(SystemExit) as exit_:
        main([*command, p, "--lr", "0.1", "--epochs=3"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    shown = f"tfviz {command[0]}" if command else "tfviz"
    assert "unrecognized arguments: --lr 0.1 --epochs=3" in err
    assert f"arguments for the script go after --: {shown} {p} [options] -- --lr 0.1 --epochs=3" in err


def test_the_installed_command_shows_where_a_scripts_options_go(tmp_path):
    """Through the installed ``tfviz``, as a user types it, the command and the window's."""
    p = _write(tmp_path, "train.py", "print('never run')\n")
    installed = os.path.join(os.path.dirname(sys.executable), "tfviz")
    for words, shown in ((["check", p], f"tfviz check {p}"), ([p], f"tfviz {p}")):
        r = subprocess.run([installed, *words, "--lr", "0.1"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert f"arguments for the script go after --: {shown} [options] -- --lr 0.1" in r.stderr


def test_an_unknown_option_of_a_command_that_runs_no_script_gets_no_dashes(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--lr", "0.1"])
    err = capsys.readouterr().err
    assert "tfviz serve: error: unrecognized arguments: --lr 0.1" in err and "go after --" not in err


def test_not_python(capsys, tmp_path):
    p = tmp_path / "model.h5"
    p.write_bytes(b"\x89HDF\r\n\x1a\n\x00\xff\xfe")
    assert "not a Python script" in check_error(capsys, str(p))


def test_syntax_error_names_file_and_line(capsys, tmp_path):
    p = _write(tmp_path, "bad.py", "import tensorflow as tf\n\ndef loss(:\n    return 1\n")
    err = check_error(capsys, p)
    assert f"{p}:3: syntax error" in err


def test_script_that_raises_names_its_line(capsys, tmp_path):
    p = _write(tmp_path, "boom.py", "import tensorflow as tf\nx = 1\nraise RuntimeError('no data')\n")
    err = check_error(capsys, p)
    assert f"{p}:3:" in err and "RuntimeError: no data" in err


def test_no_target_runs_the_script_as_a_program(capsys, tmp_path):
    p = _write(tmp_path, "none.py", "import tensorflow as tf\nw = tf.Variable(1.0)\n")
    assert "ran to the end without computing a gradient" in check_error(capsys, p)


def test_several_targets_are_listed(capsys, tmp_path):
    p = _write(
        tmp_path,
        "two.py",
        """
        import tensorflow as tf
        w = tf.Variable(1.0)
        def a(): return w * 2
        def b(): return w * 3
        """,
    )
    err = check_error(capsys, p)  # no loss(): run as a program, which computes no gradient
    assert "could differentiate instead: a, b" in err
    assert main(["check", p, "--list-targets"]) == 0
    assert capsys.readouterr().out.split() == ["a", "b"]
    assert main(["check", p, "--target", "b"]) == 0


def test_target_with_arguments(capsys, tmp_path):
    p = _write(
        tmp_path,
        "args.py",
        """
        import tensorflow as tf
        w = tf.Variable(1.0)
        def loss(x):
            return w * x
        """,
    )
    err = check_error(capsys, p, "--target", "loss")
    assert "takes arguments (x)" in err and f"{p}:4" in err


def test_target_returning_non_tensor(capsys, tmp_path):
    p = _write(
        tmp_path,
        "num.py",
        """
        import tensorflow as tf
        def loss():
            return 3.0
        """,
    )
    assert "returned float, not a tensor" in check_error(capsys, p)


def test_target_that_raises(capsys, tmp_path):
    p = _write(
        tmp_path,
        "raises.py",
        """
        import tensorflow as tf
        w = tf.Variable([1.0, 2.0])
        def loss():
            return tf.reduce_sum(w[5])
        """,
    )
    err = check_error(capsys, p)
    assert "the target 'loss' raised" in err and f"{p}:5" in err


def test_script_output_is_captured_and_main_guard_respected(tmp_path):
    p = _write(
        tmp_path,
        "chatty.py",
        """
        import tensorflow as tf
        print("hello from the script")
        w = tf.Variable(1.0)
        def loss():
            return w * 2.0
        if __name__ == "__main__":
            raise SystemExit("training loop must not run")
        """,
    )
    r = tfviz("check", p, "--json", cwd=os.path.dirname(p))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # the script's print did not corrupt the JSON
    assert doc["ok"] is True


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help(flag, capsys):
    with pytest.raises(SystemExit) as e:
        main([flag])
    assert e.value.code == 0


def test_json_error_lists_candidate_targets(capsys, tmp_path):
    p = _write(
        tmp_path,
        "pair.py",
        """
        import tensorflow as tf
        w = tf.Variable(1.0)
        def first(): return w * 2
        def second(): return w * 3
        """,
    )
    assert main(["check", p, "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["error"]["candidates"] == ["first", "second"]


def test_json_is_strict_even_for_infinite_gradients():
    r = tfviz("check", str(EXAMPLES / "kind_nan.py"), "--json")
    assert r.returncode == 1

    def reject(name):
        raise ValueError(f"non-standard JSON constant {name}")

    doc = json.loads(r.stdout, parse_constant=reject)
    (w,) = doc["variables"]
    assert w["kind"] == "nan" and w["grad_norm"] is None


def test_a_loss_that_needs_arguments_says_how_to_make_it_a_target(capsys, tmp_path):
    """Without --target, loss(x) is not a target (tfviz calls one with no argument): the
    script runs as a program, computes no gradient, and the message says what to do."""
    p = _write(
        tmp_path,
        "args_only.py",
        """
        import tensorflow as tf
        w = tf.Variable(1.0)
        def loss(x):
            return w * x
        """,
    )
    err = check_error(capsys, p)
    assert "ran to the end without computing a gradient" in err
    assert "loss(x) takes arguments" in err and "--target target" in err
