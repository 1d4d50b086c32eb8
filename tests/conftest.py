"""Shared fixtures: in-process analyses are cached per session (TF imports once)."""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "resources" / "examples"


def line_of(path: Path, text: str) -> int:
    """The number of the first line of ``path`` that contains ``text``: what a report
    should point at, found in the program itself rather than written as a number."""
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def check_json(path: Path, *args: str) -> tuple[int, dict]:
    """``tfviz check PATH --json ARGS`` through the installed command, as a user runs it: its
    exit status and the document it printed. A traceback of tfviz's own on stderr fails."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [str(Path(sys.executable).with_name("tfviz")), "check", str(path), "--json", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done.returncode, json.loads(done.stdout)


def default_sigint() -> None:
    """``preexec_fn`` for a child a test sends SIGINT: a shell's background job
    ignores SIGINT, its children inherit that, and the signal would do nothing."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Test processes run side by side (a pytest worker per core, each with its analyses' and
# oracles' processes): one intra-op thread each keeps TensorFlow's thread pools from
# contending for the same cores (10 % on the end-to-end files alone). tfviz and its oracles see
# the same setting, and the warm servers are started with it.
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")

# Scripts that exist to hang, crash or raise are run by the GUI tests, never imported.
collect_ignore_glob = ["gui/scripts/*", "bench/*", "programs/*"]

_cache: dict[str, object] = {}


def _forking() -> bool:
    return not os.environ.get("TFVIZ_TEST_NO_FORK") and hasattr(os, "fork")


#: The files whose tests take 7 s or more on 2 cores (``pytest --durations=0``, summed per
#: file): ``make test-quick`` leaves them out (``-m "not corpus and not slow"``) to stay a
#: fast inner loop; ``make test`` runs them all. ``tests/test_layers.py`` checks each exists.
SLOW_FILES = frozenset(
    {
        "gui/test_acceptance_models.py",
        "gui/test_background_build.py",
        "gui/test_program.py",
        "gui/test_warm_window.py",
        "test_answered_vs_probed.py",
        "test_api.py",
        "test_cause.py",
        "test_check_reliability.py",
        "test_cli_isolation.py",
        "test_commands.py",
        "test_copy_vs_trace.py",
        "test_examples.py",
        "test_export_images.py",
        "test_fidelity.py",
        "test_jacobian.py",
        "test_jacobian_slices.py",
        "test_jupyter.py",
        "test_multiworker.py",
        "test_output_files.py",
        "test_packaging.py",
        "test_program_memory.py",
        "test_program_mode.py",
        "test_program_patterns.py",
        "test_program_steps.py",
        "test_untrained.py",
        "test_warm_workers.py",
        "test_watch.py",
        "test_worker.py",
    }
)


def pytest_collection_modifyitems(config, items):
    """Mark the tests of :data:`SLOW_FILES` ``slow``."""
    slow, tests = pytest.mark.slow, ROOT / "tests"
    for item in items:
        path = Path(item.path)
        if path.is_relative_to(tests) and path.relative_to(tests).as_posix() in SLOW_FILES:
            item.add_marker(slow)


def pytest_configure(config):
    """The controller of ``pytest -n N`` starts one oracle server for all its workers (they
    inherit its environment), which would otherwise each import TensorFlow for one of their
    own. Each worker keeps a warm server of its own: a forked worker must see the environment
    its client has, and the GUI tests give each process its own settings folder."""
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None) or not _forking():
        return
    from tests import forkserver

    os.environ[forkserver.SHARED_SERVER] = forkserver.start()


def _qt_application() -> object | None:
    widgets = sys.modules.get("PySide6.QtWidgets")
    return widgets.QApplication.instance() if widgets is not None else None


@pytest.fixture(scope="module", autouse=True)
def qt_garbage_destroyed_on_the_gui_thread(request):
    """After a module that made Qt objects, destroy those it left behind, here on the GUI
    thread. Left to the cycle collector, a widget is destroyed on whichever thread set a
    collection off, and a widget closing off the GUI thread waits for that thread: a later
    module's program thread (tfviz's in-process program mode) deadlocked so with the main
    thread waiting for it."""
    before = _qt_application()
    yield
    used = Path(request.node.path).is_relative_to(ROOT / "tests" / "gui") or (
        _qt_application() is not None and before is None
    )
    if not used and not any(
        {"qapp", "qtbot"} & set(getattr(item, "fixturenames", ()))
        for item in request.session.items
        if item.path == request.node.path
    ):
        return
    if _qt_application() is None:
        return
    import gc

    from PySide6.QtCore import QCoreApplication, QEvent

    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


@pytest.fixture(scope="session", autouse=True)
def warm_workers():
    """Every ``tfviz check``, ``export`` and ``jacobian`` a test runs gets its worker forked by
    one warm server per test process (:mod:`tfviz.worker.forkserver`) instead of importing
    TensorFlow anew; ``TFVIZ_TEST_NO_FORK=1`` starts each one afresh, to compare. Until the
    server listens, clients start their own; from then on they wait while it loads TensorFlow."""
    import subprocess
    import sys
    import tempfile

    from tfviz.worker.forkserver import SERVER_VARIABLE
    from tfviz.worker.launch import worker_environment

    if not _forking():
        yield None
        return
    path = os.path.join(tempfile.mkdtemp(prefix="tfviz-workers-"), "s")
    server = subprocess.Popen(
        [sys.executable, "-X", "faulthandler", "-m", "tfviz.worker.forkserver", path],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=worker_environment(),
        start_new_session=True,
    )
    os.environ[SERVER_VARIABLE] = path
    try:
        yield path
    finally:
        os.environ.pop(SERVER_VARIABLE, None)
        assert server.stdin is not None
        server.stdin.close()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


def check_document_errors(text: str) -> list[str]:
    """How a ``tfviz check --json`` document breaks the shipped check schema (none: it holds),
    with the saved-analysis schema beside it for the parts it refers to."""
    import json

    import jsonschema
    from referencing import Registry, Resource

    from tfviz import schemas

    if not _check_validator:
        analysis, check = schemas.load("analysis"), schemas.load("check")
        registry = Registry().with_resources(
            [(s["$id"], Resource.from_contents(s)) for s in (analysis, check)]
        )
        _check_validator.append(jsonschema.Draft202012Validator(check, registry=registry))
    doc = json.loads(text)
    errors = list(_check_validator[0].iter_errors(doc))
    if not errors:
        return []
    best = jsonschema.exceptions.best_match(errors)  # the branch of oneOf that came nearest
    return [f"{'/'.join(map(str, best.absolute_path))}: {best.message[:400]}"]


_check_validator: list = []


def _checked_json(argv, stdout) -> None:
    """``tfviz check … --json`` run by a test: what it printed holds to the check schema."""
    if not isinstance(argv, (list, tuple)) or not isinstance(stdout, str) or not stdout.strip():
        return
    words = [str(a) for a in argv]
    if "check" not in words or not ({"--json"} & set(words) or "json" in words[words.index("check") :]):
        return
    if not any(w.endswith(("tfviz", "tfviz.cli")) for w in words[: words.index("check")]):
        return
    errors = check_document_errors(stdout)
    assert not errors, f"{' '.join(words)}: --json breaks tfviz-check.schema.json: {errors[:5]}"


@pytest.fixture(scope="session", autouse=True)
def every_check_json_holds_to_its_schema():
    """Every ``tfviz check --json`` document any test's ``subprocess.run`` gets back is checked
    against the schema tfviz ships, whatever else the test then asserts of it."""
    import subprocess

    real = subprocess.run

    def run(*args, **kwargs):
        done = real(*args, **kwargs)
        argv = args[0] if args else kwargs.get("args")
        if done.returncode in (0, 1, 2) and isinstance(done.stdout, str):
            _checked_json(argv, done.stdout)
        return done

    subprocess.run = run
    try:
        yield
    finally:
        subprocess.run = real


@pytest.fixture(scope="session")
def analyze_example():
    from tfviz.analysis.diagnose import analyze

    def run(name: str, target: str | None = None):
        key = f"{name}:{target}"
        if key not in _cache:
            _cache[key] = analyze(str(EXAMPLES / name), target)
        return _cache[key]

    return run


def saved_and_opened(report) -> None:
    """The report's saved analysis holds to the shipped schema (checked by jsonschema, not
    by tfviz's own validator) and opens back as the same report."""
    import json

    import jsonschema

    from tfviz import schemas
    from tfviz.analysisfile import analysis_document, analysis_json, parse_analysis
    from tfviz.report import Report

    doc = analysis_document(report)
    errors = sorted(jsonschema.Draft202012Validator(schemas.load("analysis")).iter_errors(doc), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message[:200]}" for e in errors[:3]]
    assert parse_analysis(analysis_json(report)) == Report.from_dict(json.loads(report.to_json()))


def tensorflow_truth(
    path: str, names: list[str], target: str = "loss", zeros: bool = False
) -> dict[str, str]:
    """What tape.gradient really does for each named variable, computed here
    independently of tfviz: call once (lazy builds), then differentiate inside
    tf.function, as a training step does. Returns name -> connected |
    disconnected | broken | nan, or with ``zeros`` also zero (a gradient tensor
    whose every element is exactly 0)."""
    import math

    import tensorflow as tf

    cwd = os.getcwd()
    os.chdir(os.path.dirname(path))
    try:
        ns = runpy.run_path(path, run_name="tfviz_truth")
    finally:
        os.chdir(cwd)
    fn = ns[target]
    fn = getattr(fn, "python_function", fn)
    fn()
    variables = [eval(n, ns) for n in names]  # noqa: S307 - our own example paths
    tf_vars = [getattr(v, "value", v) if not isinstance(v, tf.Variable) else v for v in variables]

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            value = fn()
        return tape.gradient(value, tf_vars)

    try:
        grads = step()
    except Exception:  # noqa: BLE001
        return {n: "broken" for n in names}
    out = {}
    for n, g in zip(names, grads):
        if g is None:
            out[n] = "disconnected"
        else:
            values = g.values if isinstance(g, tf.IndexedSlices) else g
            finite = math.isfinite(float(tf.reduce_sum(tf.abs(tf.cast(values, tf.float64)))))
            out[n] = "connected" if finite else "nan"
            if zeros and finite and not bool(tf.reduce_any(tf.not_equal(values, 0))):
                out[n] = "zero"
    return out


def pytest_terminal_summary(terminalreporter):
    """The corpus table (tests/test_corpus.py), when the corpus ran."""
    import sys

    corpus = next(
        (
            m
            for name, m in list(sys.modules.items())
            if name.rsplit(".", 1)[-1] == "test_corpus" and hasattr(m, "corpus_table")
        ),
        None,
    )
    text = corpus.corpus_table() if corpus is not None else None
    if text:
        terminalreporter.write_sep("=", "corpus: tfviz against TensorFlow")
        terminalreporter.write_line(text)
