"""The command table (:mod:`tfviz.commands.table`) and the one exit status (:mod:`tfviz.exitstatus`).

Each headless command runs end to end through the installed ``tfviz`` console script, as a
user runs it; the rest are in-process and need neither TensorFlow nor Qt.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import EXAMPLES, ROOT
from tfviz import cli
from tfviz.commands import check, open_app
from tfviz.commands import export as exportcli
from tfviz.commands import jacobian as jacobian_cli
from tfviz.commands.table import BY_NAME, COMMANDS, HEADLESS
from tfviz.exitstatus import ExitStatus

TFVIZ = Path(sys.executable).with_name("tfviz")  # the installed command, beside this Python
installed = pytest.mark.skipif(not TFVIZ.exists(), reason="the tfviz command is not installed")

#: One command line per command of the table, that its parser accepts.
SAMPLES: dict[str, list[str]] = {
    "check": ["check", "s.py"],
    "jacobian": ["jacobian", "s.py", "--wrt", "W"],
    "export": ["export", "s.py", "-o", "g.dot"],
    "serve": ["serve", "--socket", "s"],
    "open": ["open", "s.py"],
}


def tfviz(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TFVIZ), *args], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, cwd=cwd
    )


# -- end to end, through the console script ---------------------------------------------------


@pytest.fixture(scope="module")
def stop_gradient_graph(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path]:
    """``tfviz check kind_stop_gradient.py --graph G``: its exit status, and G (a saved analysis)."""
    graph = tmp_path_factory.mktemp("check") / "graph.json"
    r = tfviz("check", str(EXAMPLES / "kind_stop_gradient.py"), "--graph", str(graph))
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    return r.returncode, graph


@installed
def test_check_finds_the_stop_gradient_exit_1(stop_gradient_graph: tuple[int, Path]) -> None:
    code, graph = stop_gradient_graph
    assert code == ExitStatus.PROBLEMS
    assert graph.stat().st_size > 0


def _refuse_constant(name: str) -> None:
    raise AssertionError(f"{name} is not strict JSON")


@installed
@pytest.mark.parametrize("name", ["kind_stop_gradient.py", "kind_nan.py"])
def test_check_graph_writes_strict_json_that_reads_back_as_the_report(tmp_path: Path, name: str) -> None:
    # --graph is written from the worker's data as it came; a NaN norm takes the report's
    # own way (null). Either way the file is the report the command printed.
    from tfviz.analysisfile import load_analysis

    graph = tmp_path / "graph.json"
    r = tfviz("check", str(EXAMPLES / name), "--json", "--graph", str(graph))
    assert r.returncode == ExitStatus.PROBLEMS, r.stderr[-2000:]
    json.loads(graph.read_text(), parse_constant=_refuse_constant)
    back, printed = load_analysis(graph), json.loads(r.stdout)
    assert back.ok == printed["ok"] is False
    assert [v.name for v in back.variables] == [v["name"] for v in printed["variables"]]
    assert [p.kind for p in back.problems] == [p["kind"] for p in printed["problems"]]
    assert len(back.graph.ops) == printed["graph"]["ops"] > 0


@installed
def test_check_prints_its_report_relative_to_where_it_runs_and_says_a_graph_it_cannot_write(
    tmp_path: Path,
) -> None:
    # the worker prints what the command prints: paths relative to the command's folder,
    # not to the script's (the worker runs the analysis there), and a --graph it could
    # not write is one line on stderr after the report, the exit code the analysis's
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "cut.py").write_text((EXAMPLES / "kind_stop_gradient.py").read_text())
    blocked = tmp_path / "not_a_folder"
    blocked.write_text("")
    r = tfviz("check", "work/cut.py", "--graph", str(blocked / "g.json"), cwd=tmp_path)
    assert r.returncode == ExitStatus.PROBLEMS, r.stderr[-2000:]
    assert "stop_gradient" in r.stdout and "work/cut.py:" in r.stdout
    assert "Traceback" not in r.stderr
    (line,) = [t for t in r.stderr.splitlines() if "cannot write --graph" in t]
    assert line.startswith(f"tfviz: cannot write --graph {blocked / 'g.json'}: ")


@installed
@pytest.mark.parametrize("fmt", ["--json", "--text"])
def test_check_in_a_folder_that_is_gone_prints_paths_as_they_are_and_writes_the_graph(
    tmp_path: Path, fmt: str
) -> None:
    # With no folder to print paths relative to, the worker prints the paths as they are and
    # writes --graph itself, as it does from any folder.
    from tfviz.analysisfile import load_analysis

    gone, graph = tmp_path / "gone", tmp_path / "graph.json"
    gone.mkdir()
    script = str(EXAMPLES / "kind_nan.py")
    r = subprocess.run(
        ["sh", "-c", 'cd "$1" && rmdir "$1" && exec "$2" check "$3" $5 --graph "$4"', "sh"]
        + [str(gone), str(TFVIZ), script, str(graph), "--json" if fmt == "--json" else ""],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == ExitStatus.PROBLEMS, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    json.loads(graph.read_text(), parse_constant=_refuse_constant)  # its infinite norms: null
    back = load_analysis(graph)
    if fmt == "--text":  # the script's path as it is: there is no folder to be relative to
        assert r.stdout.startswith(f"{script}  target: loss") and "nan" in r.stdout
        assert back.script == script and back.problems
        return
    printed = json.loads(r.stdout)
    assert back.script == printed["script"] == script
    assert [p.kind for p in back.problems] == [p["kind"] for p in printed["problems"]]
    assert len(back.graph.ops) == printed["graph"]["ops"] > 0


@installed
def test_export_in_a_folder_that_is_gone_says_what_it_wrote(
    stop_gradient_graph: tuple[int, Path], tmp_path: Path
) -> None:
    _, graph = stop_gradient_graph
    gone, out = tmp_path / "gone", tmp_path / "graph.dot"
    gone.mkdir()
    r = subprocess.run(
        ["sh", "-c", 'cd "$1" && rmdir "$1" && exec "$2" export "$3" -o "$4"', "sh"]
        + [str(gone), str(TFVIZ), str(graph), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == ExitStatus.PROBLEMS, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert r.stdout.startswith(f"{out}: dot, ") and out.read_text().lstrip()


@installed
def test_check_healthy_exit_0() -> None:
    r = tfviz("check", str(EXAMPLES / "seed3_chain_rule.py"))
    assert r.returncode == ExitStatus.OK, r.stderr[-2000:]


@installed
def test_export_writes_the_file(stop_gradient_graph: tuple[int, Path], tmp_path: Path) -> None:
    """A saved analysis (check's --graph) exported as DOT: nothing runs, the verdict is kept."""
    _, graph = stop_gradient_graph
    out = tmp_path / "graph.dot"
    r = tfviz("export", str(graph), "-o", str(out))
    assert r.returncode == ExitStatus.PROBLEMS, r.stderr[-2000:]
    assert out.read_text().lstrip().startswith(("digraph", "strict digraph", "//"))
    assert "gradient problems found" in r.stdout


@installed
def test_jacobian_writes_npy(tmp_path: Path) -> None:
    out = tmp_path / "j.npy"
    r = tfviz(
        "jacobian", "seed3_chain_rule_split.py", "--of", "y", "--wrt", "b", "-o", str(out), cwd=EXAMPLES
    )
    assert r.returncode == ExitStatus.OK, r.stderr[-2000:]
    j = np.load(out)
    assert j.shape == (1, 3, 3)  # y (1, 3) by b (3,)
    assert np.all(np.diag(j[0]) > 0) and np.count_nonzero(j[0] - np.diag(np.diag(j[0]))) == 0  # tanh


def test_help_through_the_console_script_imports_neither_tensorflow_nor_qt() -> None:
    code = (
        "import sys, app.launch as launch\ntry:\n launch.main(['--help'])\nexcept SystemExit: pass\n"
        "sys.stderr.write(repr(sorted(m for m in ('tensorflow', 'PySide6') if m in sys.modules)))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.stderr.strip().endswith("[]"), r.stderr[-2000:]
    assert all(c.name in r.stdout for c in COMMANDS)


def test_a_check_through_the_console_script_keeps_tensorflow_qt_and_numpy_in_its_worker() -> None:
    # the command's own process only reads the worker's answer: CI and re-runs on save pay
    # its start each time (NumPy alone was half of it)
    code = (
        "import sys, app.launch as launch\ntry:\n launch.main(['check', sys.argv[1]])\n"
        "except SystemExit: pass\nsys.stderr.write(repr(sorted(m for m in ('tensorflow', 'PySide6',"
        " 'numpy') if m in sys.modules)))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(EXAMPLES / "kind_stop_gradient.py")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert "gradient problems found" in r.stdout, r.stdout + r.stderr[-2000:]
    assert r.stderr.strip().endswith("[]"), r.stderr[-2000:]


# -- the table --------------------------------------------------------------------------------


def test_the_table_names_every_command_once_and_open_is_the_app() -> None:
    assert [c.name for c in COMMANDS] == ["check", "jacobian", "export", "serve", "open"]  # --help's order
    assert set(BY_NAME) == set(SAMPLES)
    assert BY_NAME["open"].headless is False and BY_NAME["open"].module is open_app
    assert HEADLESS == {"check", "jacobian", "export", "serve"}


@pytest.mark.parametrize("name", list(SAMPLES))
def test_the_parser_is_built_from_the_table(name: str) -> None:
    assert cli.parse_args(SAMPLES[name]).command == name
    assert cli.parse_args(["s.py"]).command == "open"  # a bare script opens the app


def test_the_launcher_runs_the_tables_headless_commands_and_opens_the_app_for_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import app.launch
    import app.main

    calls: list[tuple[str, object]] = []

    def recorder(where: str, code: int) -> Callable[..., int]:
        def record(*args: object, **kwargs: object) -> int:
            calls.append((where, args))
            return code

        return record

    monkeypatch.setattr(cli, "main", recorder("library", 0))
    monkeypatch.setattr(app.main, "run_app", recorder("window", 0))
    routed: dict[str, str] = {}
    for name, argv in SAMPLES.items():
        calls.clear()
        assert app.launch.main(argv) == 0
        ((where, _),) = calls
        routed[name] = where
    assert {n for n, where in routed.items() if where == "library"} == HEADLESS
    assert {n for n, where in routed.items() if where == "window"} == {
        c.name for c in COMMANDS if not c.headless
    }
    calls.clear()
    app.launch.main([])  # no command: the window
    assert [where for where, _ in calls] == ["window"]


# -- one exit status --------------------------------------------------------------------------


@pytest.mark.parametrize("module", [cli, exportcli, jacobian_cli, check, open_app], ids=lambda m: m.__name__)
def test_no_module_keeps_exit_constants_of_its_own(module: object) -> None:
    assert not [n for n in dir(module) if n.startswith("EXIT_")]


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "missing.py"],
        ["check", "missing.py", "--json"],
        ["export", "missing.py", "-o", "out.dot"],
        ["export", "missing.py", "-o", "out.txt"],
        ["jacobian", "missing.py", "--wrt", "W"],
        ["jacobian", "missing.py", "--wrt", "W", "-o", "j.txt"],
        ["open", "missing.py"],
        ["serve", "--socket", "missing-folder/socket"],
        [],
    ],
    ids=" ".join,
)
def test_commands_return_exit_status_members(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = cli.main(argv)
    assert type(code) is ExitStatus and code is ExitStatus.ERROR
    assert "Traceback" not in capsys.readouterr().err


def test_each_commands_run_returns_a_member(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through each module's own ``run``, as the table calls it: OK and PROBLEMS too."""
    from tfviz.analysisfile import analysis_json
    from tfviz.report import Report

    monkeypatch.chdir(tmp_path)
    for ok, status in ((True, ExitStatus.OK), (False, ExitStatus.PROBLEMS)):
        saved = tmp_path / f"saved_{ok}.json"
        saved.write_text(analysis_json(Report(script="s.py", target="loss", ok=ok)))
        code = exportcli.run(cli.parse_args(["export", str(saved), "-o", f"out_{ok}.json"]))
        assert type(code) is ExitStatus and code is status
    capsys.readouterr()
    script = str(EXAMPLES / "kind_stop_gradient.py")
    code = check.run(cli.parse_args(["check", script, "--list-targets"]))  # read, never run
    assert type(code) is ExitStatus and code is ExitStatus.OK
    assert capsys.readouterr().out.split() == ["loss"]
    code = jacobian_cli.run(cli.parse_args(["jacobian", script, "--wrt", "W", "--in-range", "x"]))
    assert type(code) is ExitStatus and code is ExitStatus.ERROR


def test_the_window_without_a_display_is_an_error_status(monkeypatch: pytest.MonkeyPatch) -> None:
    import app.main

    if not sys.platform.startswith("linux"):
        pytest.skip("only Linux needs DISPLAY or WAYLAND_DISPLAY")
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(var, raising=False)
    assert app.main.run_app("s.py") is ExitStatus.ERROR


def test_exit_status_values() -> None:
    assert {s.name: int(s) for s in ExitStatus} == {
        "OK": 0,
        "PROBLEMS": 1,
        "ERROR": 2,
        "INTERNAL": 3,
        "INTERRUPTED": 130,
        "HANGUP": 129,
        "TERMINATED": 143,
    }


@installed
def test_open_through_the_console_script_keeps_the_window_up(tmp_path: Path) -> None:
    """``tfviz open SCRIPT`` as a user types it: the window comes up and stays, offscreen, with
    nothing on stderr from tfviz; without a display the same command is a clear error."""
    import os
    import signal
    import time

    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path))
    script = str(EXAMPLES / "kind_integer.py")
    proc = subprocess.Popen(
        [str(TFVIZ), "open", script],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        time.sleep(6)
        assert proc.poll() is None, proc.communicate()[1][-2000:]  # still up: the window runs
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the window and the workers it started
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err[-2000:]
    bare = {k: v for k, v in env.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    done = subprocess.run(
        [str(TFVIZ), "open", script],
        env=bare,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == ExitStatus.ERROR and "no display" in done.stderr, done.stderr[-2000:]
