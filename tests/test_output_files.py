"""Every file tfviz writes is safe: complete or not there at all, the
old file untouched on failure; XML that parses and DOT that reads, whatever the op names
hold; never a FIFO, a device or a link to one, and never opened for reading;
``tfviz jacobian -o`` under ``export``'s rules, in one line with exit 2.

The user-facing cases run the installed ``tfviz`` command; the properties run in-process.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.conftest import EXAMPLES
from tests.test_export import same_graphml
from tfviz import graphformats, outputs
from tfviz.analysisfile import analysis_json
from tfviz.errors import AnalysisError
from tfviz.jacobian import files as jfiles
from tfviz.jacobian.png import to_png
from tfviz.report import GraphEdge, GraphOp, Report, VariableReport

TFVIZ = Path(sys.executable).with_name("tfviz")  # the installed command, beside this Python
SPLIT = EXAMPLES / "seed3_chain_rule_split.py"  # a small script: analyzed in seconds
#: Names no XML 1.0 file can hold as they are, and names XML and DOT must quote.
HOSTILE = [
    "\x1b[31mrelu\x1b[0m",
    "nul\x00here",
    "\ufffe",
    "\uffff",
    "lone\udc80",
    "\ud800x",
    "".join(map(chr, range(32))),
    "&<>\"'",
    "]]>",
    'a" -> "b',
    "back\\slash",
    "tab\tnew\nline\r",
]

pytestmark = pytest.mark.skipif(not TFVIZ.exists(), reason="the tfviz command is not installed")


def tfviz(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    """The installed command; a FIFO that blocks it fails the test instead of hanging it."""
    return subprocess.run(
        [str(TFVIZ), *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, **kw
    )


def tfviz_jacobian(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``tfviz jacobian``, through the installed command, as a user runs it."""
    return subprocess.run(
        [str(TFVIZ), "jacobian", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        cwd=EXAMPLES,
    )


def one_line(r: subprocess.CompletedProcess) -> str:
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tfviz: ") and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def report_named(names: list[str], ops: int = 0) -> Report:
    """A small saved analysis whose ops, scopes, messages and target carry ``names``,
    plus ``ops`` plain ops (to make a file of some size)."""
    r = Report(script="s.py", target=names[0] if names else "loss", ok=True, tensorflow="2.16")
    r.variables = [VariableReport("w", "w:0", "float32", [2], "connected")]
    r.graph.ops = [
        GraphOp(id="var:w", name="w", type="VarHandleOp", scope="", is_variable=True, on_path=True)
    ]
    for i, name in enumerate(names):
        r.graph.ops.append(
            GraphOp(id=name, name=name, type=f"Op{i}", scope=f"group{i}/{name}", on_path=True, message=name)
        )
        r.graph.edges.append(GraphEdge("var:w", name, 0, i, "float32", [2], status="passes"))
    for i in range(ops):
        r.graph.ops.append(GraphOp(id=f"op{i}", name=f"op{i}", type="Mul", scope="", on_path=True))
        r.graph.edges.append(GraphEdge("var:w", f"op{i}", 0, 0, "float32", [2], status="passes"))
    return r


def saved(folder: Path, name: str, report: Report) -> str:
    path = folder / name
    path.write_text(analysis_json(report))  # ASCII: a lone surrogate travels as \udc80
    return str(path)


def temporaries(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tfviz-tmp")]


def parses_as_dot(text: str, nodes: int) -> None:
    pydot = pytest.importorskip("pydot")
    graphs = pydot.graph_from_dot_data(text)
    assert graphs
    assert len([n for n in graphs[0].get_nodes() if n.get_name() not in ("node", "graph")]) == nodes


# -- 7: complete or not at all ---------------------------------------------------------


def test_unencodable_name_over_an_old_dot_file(tmp_path):
    """The user's case: the old DOT was truncated to 0 bytes with a traceback and exit 1."""
    old = tmp_path / "old.dot"
    r = tfviz("export", saved(tmp_path, "good.json", report_named(["ok"])), "-o", str(old))
    assert r.returncode == 0, r.stderr
    r = tfviz("export", saved(tmp_path, "bad.json", report_named(["a\udc80b"])), "-o", str(old))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    text = old.read_text(encoding="utf-8")  # strict: every byte is UTF-8
    assert "a\\\\udc80b" in text  # written out, readable, in a quoted DOT string
    parses_as_dot(text, 2)
    assert temporaries(tmp_path) == []


def _small_files_only(limit: int):
    """In the child: files past ``limit`` bytes cannot be written (EFBIG, as a full disk
    would refuse them), and that is an error, not a signal that kills the process."""

    def apply() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.parametrize("fmt", ["json", "dot", "graphml"])
def test_a_write_that_fails_midway_leaves_the_old_file(tmp_path, fmt):
    old = tmp_path / f"old.{fmt}"
    graphformats.write(report_named(["first"]), str(old))
    before = old.read_bytes()
    big = saved(tmp_path, "big.json", report_named(["x"], ops=300))
    limit = 20_000
    assert len(before) < limit < os.path.getsize(big)
    r = tfviz("export", big, "-o", str(old), preexec_fn=_small_files_only(limit))
    assert r.returncode == 2 and "File too large" in one_line(r)
    assert old.read_bytes() == before
    assert temporaries(tmp_path) == []


def test_replacing_is_all_or_nothing(tmp_path):
    path = tmp_path / "out.dot"
    path.write_text("old\n")
    path.chmod(0o640)
    with pytest.raises(RuntimeError), outputs.replacing(str(path)) as fh:
        fh.write("half")
        raise RuntimeError("interrupted")
    assert path.read_text() == "old\n" and temporaries(tmp_path) == []
    with pytest.raises(outputs.OutputError) as err, outputs.replacing(str(path)) as fh:
        fh.write("name \udc80")
    assert str(err.value) == f"cannot write {path}: '\\udc80' cannot be encoded as utf-8"
    assert path.read_text() == "old\n" and temporaries(tmp_path) == []
    with outputs.replacing(str(path)) as fh:
        fh.write("new\n")
    assert path.read_text() == "new\n" and stat.S_IMODE(path.stat().st_mode) == 0o640  # kept
    with outputs.replacing(str(tmp_path / "fresh.bin"), binary=True) as fh:
        fh.write(b"\x00")
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "fresh.bin").stat().st_mode) == 0o666 & ~umask  # not 0600


@pytest.mark.parametrize("ext", [".npy", ".csv", ".png"])
def test_jacobian_files_are_replaced_only_when_complete(tmp_path, monkeypatch, ext):
    path = tmp_path / f"j{ext}"
    path.write_bytes(b"old")
    j = SimpleNamespace(array=lambda: np.eye(3, dtype=np.float32), out_range=None, of=SimpleNamespace(size=3))
    written: list[int] = []

    def disk_full(fd: int) -> None:  # the whole file went to the temporary, then the disk filled
        written.append(os.fstat(fd).st_size)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(outputs.OutputError, match="No space left on device"):
        jfiles.write(str(path), j)
    assert written[0] > 3 and path.read_bytes() == b"old" and temporaries(tmp_path) == []
    monkeypatch.undo()
    jfiles.write(str(path), j)
    assert path.read_bytes() != b"old" and outputs.written_by_tfviz(str(path)) == (ext != ".npy")


# -- 8: XML and DOT that any reader opens ---------------------------------------------

#: Any character, lone surrogates and controls included, weighted toward the hostile ones.
NAMES = st.text(
    st.one_of(
        st.characters(),
        st.characters(categories=["Cs", "Cc"]),
        st.sampled_from("\x00\x1b\x7f\ufffe\uffff&<>\"'\\\n\r\t"),
    ),
    min_size=1,
    max_size=12,
)
#: Names that stay apart in every output (DOT drops a carriage return).
DISTINCT = {"unique_by": lambda s: outputs.xml_safe(s).replace("\r", "")}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(NAMES, min_size=1, max_size=6, **DISTINCT))
def test_graphml_and_dot_hold_any_name(tmp_path, names):
    r = report_named(names)
    for fmt in ("graphml", "dot"):
        path = tmp_path / f"g.{fmt}"
        graphformats.write(r, str(path))
        text = path.read_bytes().decode("utf-8")  # strict
        if fmt == "graphml":
            root = ET.fromstring(text)
            ns = "{http://graphml.graphdrawing.org/xmlns}"
            ids = {n.get("id") for n in root.iter(f"{ns}node")}
            assert ids == {"var:w", *map(outputs.xml_safe, names)}
            same_graphml(graphformats.to_networkx(r))
        else:
            assert not outputs._NOT_XML.search(text)
            parses_as_dot(text, len(names) + 1)


@given(text=NAMES)
def test_xml_safe_leaves_what_xml_holds(text):
    safe = outputs.xml_safe(text)
    ET.fromstring(f"<a b={_attr(safe)}>{_text(safe)}</a>")
    if not outputs._NOT_XML.search(text):
        assert safe == text


@settings(max_examples=300)
@given(
    names=st.lists(
        st.one_of(NAMES, st.sampled_from(["a\\u0000b", "\\b", "re\\f", "\\\\u00", "\x08", "x\x0c", "\x01"])),
        max_size=6,
    )
)
def test_xml_safe_json_is_the_walk(names):
    """The fast path (no walk when the JSON text shows nothing to change) is the walk's twin:
    the same document, read back, for any names, keys and backslashes included."""
    doc = {"script": "s.py", "ops": [{"name": n, n: [n, 1, None, 0.5]} for n in names], "n": len(names)}
    assert json.loads(outputs.xml_safe_json(doc)) == outputs.xml_safe_tree(doc)


@settings(max_examples=300)
@given(
    names=st.lists(
        st.one_of(
            NAMES, st.sampled_from(["a\\u0000b", "\\b", "re\\f", "\\\\u00", "\ud800", "\ufffe", "\x01"])
        ),
        max_size=6,
    ),
    ascii_only=st.booleans(),
)
def test_xml_safe_loads_is_the_walk(names, ascii_only):
    """Reading a saved file for drawing: the fast path (no walk when the text shows no
    character XML cannot hold, as itself or as an escape) is the walk's twin, for files
    written with every character escaped or as itself."""
    doc = {"script": "s.py", "ops": [{"name": n, n: [n, 1, None, 0.5]} for n in names], "n": len(names)}
    text = json.dumps(doc, ensure_ascii=ascii_only)
    assert outputs.xml_safe_loads(text) == outputs.xml_safe_tree(json.loads(text))


def _text(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _attr(s: str) -> str:
    return '"' + _text(s).replace('"', "&quot;") + '"'


def _svg_parses(folder: Path, names: list[str]) -> None:
    src = saved(folder, "names.json", report_named(names))
    out = folder / "g.svg"
    r = tfviz("export", src, "-o", str(out), "--expand", "all", "--force", timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    root = ET.parse(out).getroot()
    texts = "".join("".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text"))
    assert "Op0" in texts  # the ops were drawn


def test_svg_and_graphml_of_hostile_names_parse(tmp_path):
    pytest.importorskip("PySide6")
    _svg_parses(tmp_path, HOSTILE)
    r = tfviz("export", str(tmp_path / "names.json"), "-o", str(tmp_path / "g.graphml"))
    assert r.returncode == 0, r.stderr
    ET.parse(tmp_path / "g.graphml")


@settings(
    max_examples=3,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(names=st.lists(NAMES, min_size=1, max_size=12, **DISTINCT))
def test_svg_holds_any_name(tmp_path, names):
    """Few examples, many names each, not shrunk: every one is an export in a child process."""
    pytest.importorskip("PySide6")
    _svg_parses(tmp_path, names)


# -- 9: regular files only, never opened for reading ------------------------------------


@pytest.mark.parametrize("fmt", ["dot", "json", "svg"])
def test_a_fifo_is_refused_not_waited_on(tmp_path, fmt):
    fifo = tmp_path / f"pipe.{fmt}"
    os.mkfifo(fifo)
    r = tfviz("export", saved(tmp_path, "a.json", report_named(["x"])), "-o", str(fifo), timeout=60)
    line = one_line(r)
    assert r.returncode == 2 and str(fifo) in line and "FIFO" in line
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_link_to_dev_null_is_refused(tmp_path):
    link = tmp_path / "graph.json"
    link.symlink_to(os.devnull)
    r = tfviz("export", saved(tmp_path, "a.json", report_named(["x"])), "-o", str(link))
    assert r.returncode == 2 and "character device" in one_line(r)
    assert os.readlink(link) == os.devnull and stat.S_ISCHR(os.stat(os.devnull).st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root makes device nodes")
def test_a_device_node_is_not_replaced(tmp_path):
    """As root, rename() over a device node replaced it (/dev/full, system-wide)."""
    node = tmp_path / "full.svg"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # what /dev/full is
    except PermissionError:
        pytest.skip("no CAP_MKNOD here")
    r = tfviz("export", saved(tmp_path, "a.json", report_named(["x"])), "-o", str(node), timeout=300)
    assert r.returncode == 2 and "character device" in one_line(r)
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_check_graph_into_a_fifo_says_so_after_the_report(tmp_path):
    fifo = tmp_path / "g.json"
    os.mkfifo(fifo)
    r = tfviz("check", str(SPLIT), "--graph", str(fifo), timeout=300)
    assert r.returncode == 0 and r.stdout, r.stderr  # the report, and the analysis' exit status
    line = one_line(r)
    assert line.startswith(f"tfviz: cannot write --graph {fifo}: it is a FIFO"), line
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_recognising_own_files_never_opens_special_ones(tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    done: list[bool] = []
    t = threading.Thread(target=lambda: done.append(outputs.written_by_tfviz(str(fifo))), daemon=True)
    t.start()
    t.join(10)
    assert done == [False]  # answered at once, without opening it
    assert not outputs.written_by_tfviz(os.devnull)
    assert not outputs.written_by_tfviz(str(tmp_path))
    for name, data in (("g.dot", f"// {outputs.SIGNATURE} 0\n"), ("j.csv", f"# {outputs.SIGNATURE} 0\n1\n")):
        (tmp_path / name).write_text(data)
        assert outputs.written_by_tfviz(str(tmp_path / name))
    (tmp_path / "j.png").write_bytes(to_png(np.eye(2)))
    assert outputs.written_by_tfviz(str(tmp_path / "j.png"))
    (tmp_path / "link.dot").symlink_to(tmp_path / "g.dot")
    assert not outputs.written_by_tfviz(str(tmp_path / "link.dot"))  # O_NOFOLLOW; callers resolve


@pytest.mark.parametrize(
    "case, expect",
    [
        ("missing/out.dot", "the folder"),
        ("folder", "a folder"),
        ("fifo", "FIFO"),
        ("null", "character device"),
        ("foreign.dot", "not a file tfviz wrote"),
        ("script.py", "script being analyzed"),
    ],
)
def test_check_output_refusals(tmp_path, case, expect):
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "null").symlink_to(os.devnull)
    (tmp_path / "foreign.dot").write_text("digraph mine {}\n")
    (tmp_path / "script.py").write_text(f"# {outputs.SIGNATURE}\n")  # even if it looks like ours
    with pytest.raises(AnalysisError, match=expect) as err:
        outputs.check_output(str(tmp_path / case), str(tmp_path / "script.py"), force=False)
    assert "\n" not in str(err.value)


def test_check_output_allows_new_ours_and_forced(tmp_path):
    outputs.check_output(str(tmp_path / "new.dot"), "s.py")
    graphformats.write(report_named(["x"]), str(tmp_path / "ours.graphml"))
    outputs.check_output(str(tmp_path / "ours.graphml"), "s.py")
    (tmp_path / "link.graphml").symlink_to(tmp_path / "ours.graphml")
    outputs.check_output(str(tmp_path / "link.graphml"), "s.py")  # the file it names is ours
    (tmp_path / "foreign.dot").write_text("mine\n")
    outputs.check_output(str(tmp_path / "foreign.dot"), "s.py", force=True)


# -- 10: tfviz jacobian -o, as export --------------------------------------------------


def test_jacobian_refusals_are_one_line_exit_2_before_running(tmp_path):
    foreign = tmp_path / "mine.csv"
    foreign.write_text("1,2\n")
    npy = tmp_path / "data.npy"
    np.save(npy, np.zeros(2))
    fifo = tmp_path / "j.png"
    os.mkfifo(fifo)
    base = [str(SPLIT), "--of", "y", "--wrt", "W"]
    cases = [
        (["-o", str(tmp_path / "missing" / "j.npy")], "folder"),
        (["--in-range", "5"], "--in-range takes START:STOP"),
        (["--out-range", "3:1"], "--out-range takes START:STOP"),
        (["-o", str(foreign)], "not a file tfviz wrote; use --force"),
        (["-o", str(npy)], "cannot say what wrote it"),
        (["-o", str(fifo)], "FIFO"),
        (["-o", str(tmp_path / "j.txt")], "-o must end in"),
    ]
    for extra, expect in cases:
        r = tfviz_jacobian(*base, *extra, timeout=120)
        assert r.returncode == 2 and expect in one_line(r), (extra, r.stderr)
        assert r.stdout == ""  # refused before the script ran
    assert foreign.read_text() == "1,2\n" and np.load(npy).shape == (2,)


def test_jacobian_replaces_its_own_file_and_others_only_with_force(tmp_path):
    out = tmp_path / "j.csv"
    out.write_text("1,2\n")
    r = tfviz_jacobian(str(SPLIT), "--of", "y", "--wrt", "b", "-o", str(out), "--force")
    assert r.returncode == 0, r.stderr[-2000:]
    assert out.read_text().startswith(f"# {outputs.SIGNATURE}")
    assert np.loadtxt(out, delimiter=",").shape == (3, 3)  # J(y, b): y is (1, 3)
    first = out.read_text()
    out.write_text(first.replace("0", "9", 1))  # a tfviz CSV, edited: still tfviz's
    r = tfviz_jacobian(str(SPLIT), "--of", "y", "--wrt", "b", "-o", str(out))
    assert r.returncode == 0 and out.read_text() == first and temporaries(tmp_path) == [], r.stderr
