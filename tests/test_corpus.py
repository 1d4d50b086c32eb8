"""The corpus: realistic training programs, each checked against TensorFlow.

Every program under ``tests/programs/corpus/`` follows a common public
pattern (named in its docstring) and runs offline on synthetic data. Its
healthy run and, where it has one, its ``--bug`` run are diagnosed through
the installed ``tfviz check --json`` command, as a user runs it, and compared
with TensorFlow's own answer at the same gradient computation
(``tests/program_truth.py``, which never imports tfviz):

* each source's status (connected, zero, disconnected, broken, NaN) is
  TensorFlow's;
* a healthy run exits 0 with no problem at all: not one false alarm;
* a ``--bug`` run exits 1, and TensorFlow confirms the bug: a source that
  gets no usable gradient, or a variable tfviz calls never trained that the
  real optimizer step indeed leaves unchanged (``tests/update_truth.py``);
* every variable tfviz calls never trained is unchanged by that real step.

* each ``|grad|`` is the norm of the gradient the program's own gradient call returns at
  that step (every program seeds Python, NumPy and TensorFlow, so both runs draw the same
  numbers).

The docstring fields (``Pattern:``, ``Family:``, ``Bug:``, ``Step:``,
``Args:``, ``Truth:``, ``Update:``, ``Norms:``) say how to run each program. ``Missed: bug|healthy|both
- why`` names a run tfviz is known to get wrong: it is an expected failure
(strict, so a fix shows) and the table says "known miss". The whole corpus takes
minutes, so it is marked ``corpus``: ``pytest -m "not corpus"`` skips it.
At the end of the run a table of every case is printed.
"""

from __future__ import annotations

import ast
import json
import os
import shlex
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests import forkserver
from tests.conftest import ROOT

CORPUS = ROOT / "tests" / "programs" / "corpus"
TFVIZ = Path(sys.executable).with_name("tfviz")
pytestmark = pytest.mark.corpus


@dataclass
class Case:
    program: Path
    family: str
    pattern: str
    bug: bool
    step: int = 1
    args: list[str] = field(default_factory=list)
    truth_flags: list[str] = field(default_factory=list)
    #: why tfviz is known to get this run wrong ("" when it is not)
    missed: str = ""
    #: the optimizer update that applies step ``step``'s gradients (``Update:``; default ``step``)
    update: int = 0
    #: why tfviz's ``|grad|`` is known to differ from the program's own (``Norms: healthy|bug|both - why``);
    #: strict: a run whose sizes agree after all fails until the field goes
    norms_differ: str = ""

    @property
    def id(self) -> str:
        return f"{self.program.stem}{'[bug]' if self.bug else ''}"

    @property
    def program_args(self) -> list[str]:
        return [*self.args, *(["--bug"] if self.bug else [])]


def fields_of(path: Path) -> dict[str, str]:
    """The ``Name: value`` lines of a program's docstring.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "p.py"
    >>> _ = p.write_text('\"\"\"Trains.\\n\\nPattern: X\\nStep: 2\\n\"\"\"\\n')
    >>> fields_of(p)
    {'Pattern': 'X', 'Step': '2'}
    """
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    out: dict[str, str] = {}
    key = None
    for line in doc.splitlines():
        head, sep, rest = line.partition(":")
        if sep and head.strip() and " " not in head.strip() and head == head.lstrip():
            key = head.strip()
            out[key] = rest.strip()
        elif key and line.startswith(" ") and line.strip():
            out[key] += " " + line.strip()
        else:
            key = None
    return out


def cases() -> list[Case]:
    found = []
    for path in sorted(CORPUS.glob("*.py")):
        f = fields_of(path)
        common = dict(
            program=path,
            family=f.get("Family", "?"),
            pattern=f.get("Pattern", ""),
            step=int(f.get("Step", "1")),
            args=shlex.split(f.get("Args", "")),
            truth_flags=shlex.split(f.get("Truth", "")),
            update=int(f.get("Update", f.get("Step", "1"))),
        )
        which, _, why = f.get("Missed", "").partition(" - ")
        sized, _, differ = f.get("Norms", "").partition(" - ")
        found.append(
            Case(
                bug=False,
                missed=why if which.strip() in ("healthy", "both") else "",
                norms_differ=differ if sized.strip() in ("healthy", "both") else "",
                **common,
            )
        )
        if f.get("Bug"):
            found.append(
                Case(
                    bug=True,
                    missed=why if which.strip() in ("bug", "both") else "",
                    norms_differ=differ if sized.strip() in ("bug", "both") else "",
                    **common,
                )
            )
    return found


def _json(cmd: list[str], timeout: int = 600) -> tuple[int, dict | None, str]:
    done = forkserver.run(cmd, timeout=timeout, cwd=ROOT)  # the oracles forked, tfviz as installed
    try:
        return done.returncode, json.loads(done.stdout), done.stderr
    except json.JSONDecodeError:
        return done.returncode, None, done.stderr + done.stdout


@dataclass
class Outcome:
    case: Case
    rc: int
    report: dict | None
    truth: dict | None
    seconds: float
    python_seconds: float
    detail: str = ""
    updates: dict | None = None


def run_case(case: Case) -> Outcome:
    start = time.perf_counter()
    rc, report, err = _json(
        [str(TFVIZ), "check", str(case.program), "--step", str(case.step), "--json", "--", *case.program_args]
    )
    took = time.perf_counter() - start
    start = time.perf_counter()
    trc, truth, terr = _json(
        [
            sys.executable,
            str(ROOT / "tests" / "program_truth.py"),
            str(case.program),
            "--step",
            str(case.step),
            *case.truth_flags,
            "--",
            *case.program_args,
        ]
    )
    python_took = time.perf_counter() - start
    outcome = Outcome(case, rc, report, truth, took, python_took, detail=(err or "")[-1500:])
    if report and any(v.get("kind") == "not_trained" for v in report.get("variables", [])):
        _, outcome.updates, _ = _json(
            [
                sys.executable,
                str(ROOT / "tests" / "update_truth.py"),
                str(case.program),
                "--update",
                str(case.update),
                *case.truth_flags,
                "--",
                *case.program_args,
            ]
        )
    if truth is None:
        outcome.detail += "\ntruth failed: " + terr[-1500:]
    return outcome


_outcomes: dict[str, Outcome] = {}


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    """Every case, two at a time (each is its own TensorFlow process)."""
    if not _outcomes:
        with ThreadPoolExecutor(max_workers=2) as pool:
            for out in pool.map(run_case, cases()):
                _outcomes[out.case.id] = out
    return _outcomes


def _norm(name: str) -> str:
    """Keras numbers repeated names per process (dense_3): compare without it.

    >>> _norm("sequential_1/dense_2/kernel:0")
    'sequential/dense/kernel'
    """
    import re

    name = name.split(":")[0]
    return "/".join(re.sub(r"_\d+$", "", part) for part in name.split("/"))


def truth_sources(truth: dict) -> list[dict]:
    """TensorFlow's sources at the step. A program whose step fails while it is
    traced (``No gradients provided`` for a None gradient) never runs it: then
    the trace's own answer (None, or a tensor) is TensorFlow's."""
    if truth.get("kind") in ("tape.gradient", "exception"):
        return truth.get("sources", [])
    traced = [t for t in truth.get("traces", []) if not t.get("executed")]
    if truth.get("kind") == "program_error" and traced:
        return [
            {**s, "status": "connected" if s["status"] == "tensor" else s["status"]}
            for s in traced[-1]["sources"]
        ]
    return []


def norms(outcome: Outcome) -> tuple[dict[str, float], dict[str, float]]:
    """(the gradient norm the program's own gradient call returned per connected source, as
    TensorFlow computed it inside the program's run; tfviz's ``|grad|``), matched by name as
    :func:`statuses` matches them."""
    theirs: dict[str, float] = {}
    for s in truth_sources(outcome.truth or {}):
        if s.get("status") == "connected" and s.get("norm") is not None:
            theirs.setdefault(s["name"].split(":")[0], s["norm"])
    ours: dict[str, float] = {}
    rows = (outcome.report or {}).get("variables", [])
    by_name = {(r.get("tf_name") or r["name"]).split(":")[0]: r for r in rows}
    for name in theirs:
        row = by_name.get(name) or next((r for n, r in by_name.items() if _norm(n) == _norm(name)), None)
        if row is not None and row.get("grad_norm") is not None:
            ours[name] = row["grad_norm"]
    return theirs, ours


def norms_differ(outcome: Outcome) -> list[str]:
    """Sources whose ``|grad|`` is not what the program's own gradient call returned."""
    import math

    theirs, ours = norms(outcome)
    return [
        f"{name}: tfviz {ours[name]:.4g}, TensorFlow {value:.4g}"
        for name, value in theirs.items()
        if name in ours and not math.isclose(ours[name], value, rel_tol=2e-3, abs_tol=1e-6)
    ]


def statuses(outcome: Outcome) -> tuple[dict[str, str], dict[str, str]]:
    """(TensorFlow's status per source, tfviz's), both keyed by TensorFlow's name.

    Both runs are fresh processes that make the same layers in the same order,
    so names match as they are; a name that does not is matched without Keras'
    numbering, then in order (a tensor the step makes has no variable name).
    """
    theirs: dict[str, str] = {}
    for i, s in enumerate(truth_sources(outcome.truth or {})):
        theirs.setdefault(s["name"].split(":")[0] or f"#{i}", s["status"])
    ours_by_name: dict[str, str] = {}
    for r in (outcome.report or {}).get("variables", []):
        status = r["kind"] if r.get("kind") in ("nan", "zero") else r["status"]
        ours_by_name.setdefault((r.get("tf_name") or r["name"]).split(":")[0], status)
    ours: dict[str, str] = {}
    leftover = [n for n in ours_by_name if n not in theirs]
    for name in theirs:
        if name in ours_by_name:
            ours[name] = ours_by_name[name]
            continue
        loose = next((n for n in leftover if _norm(n) == _norm(name)), None) or (
            leftover[0] if leftover else None
        )
        if loose is not None:
            leftover.remove(loose)
            ours[name] = ours_by_name[loose]
    return theirs, ours


def alarms(report: dict) -> list[str]:
    return [
        f"{p['severity']} {p['kind']}: {p['message'][:160]}"
        for p in report.get("problems", [])
        if p.get("severity") in ("error", "warning")
    ]


def expected_verdict(outcome: Outcome) -> str:
    theirs, _ = statuses(outcome)
    bad = sorted(f"{n} {s}" for n, s in theirs.items() if s != "connected")
    unchanged = confirmed_untrained(outcome)
    if bad or unchanged:
        return "broken: " + ", ".join(bad + [f"{n} never updated" for n in unchanged])
    return "healthy"


def tfviz_verdict(outcome: Outcome) -> str:
    if outcome.report is None:
        return f"exit {outcome.rc}: {outcome.detail.strip().splitlines()[-1][:100] if outcome.detail else ''}"
    bad = sorted(
        f"{(r.get('tf_name') or r['name']).split(':')[0]} {r.get('kind') or r['status']}"
        for r in outcome.report["variables"]
        if r["status"] != "connected" or r.get("kind")
    )
    return (
        ("broken: " + ", ".join(bad))
        if outcome.rc == 1
        else ("healthy" if outcome.rc == 0 and not bad else f"exit {outcome.rc}")
    )


def flagged_untrained(outcome: Outcome) -> list[str]:
    return [
        _norm(r.get("tf_name") or r["name"])
        for r in (outcome.report or {}).get("variables", [])
        if r.get("kind") == "not_trained"
    ]


def confirmed_untrained(outcome: Outcome) -> list[str]:
    """Variables tfviz calls never trained that the real optimizer step left unchanged."""
    unchanged = {
        _norm(v["name"]) for v in (outcome.updates or {}).get("variables", []) if not v.get("changed")
    }
    unchanged |= {
        _norm(v["path"])
        for v in (outcome.updates or {}).get("variables", [])
        if v.get("path") and not v.get("changed")
    }
    return [n for n in flagged_untrained(outcome) if n in unchanged]


def agrees(outcome: Outcome) -> tuple[bool, str]:
    if outcome.truth is None or not truth_sources(outcome.truth):
        return False, f"TensorFlow's run did not reach step {outcome.case.step}: {outcome.truth}"
    if outcome.report is None:
        return False, f"tfviz exited {outcome.rc} without a report: {outcome.detail[-600:]}"
    theirs, ours = statuses(outcome)
    if theirs != ours:
        return False, f"statuses differ: TensorFlow {theirs}, tfviz {ours}"
    differ = norms_differ(outcome)
    if differ and not outcome.case.norms_differ:
        return False, f"|grad| is not the program's own gradient's: {differ[:4]}"
    if outcome.case.norms_differ and not differ:
        return False, "|grad| now agrees with the program's own gradients: remove its Norms field"
    flagged, confirmed = flagged_untrained(outcome), confirmed_untrained(outcome)
    if set(flagged) != set(confirmed):
        wrong = sorted(set(flagged) - set(confirmed))
        return False, f"tfviz calls {wrong} never trained; the real step changes them"
    expected = expected_verdict(outcome)
    if outcome.case.bug:
        if outcome.rc == 0:
            return False, "tfviz finds nothing wrong in the --bug run"
        if expected == "healthy":
            return False, "the --bug run is healthy by TensorFlow's answer: the program does not show its bug"
        if outcome.rc != 1:
            return False, f"tfviz exited {outcome.rc} on a broken run"
    else:
        if expected != "healthy":
            return False, f"the healthy run is not healthy by TensorFlow's answer: {expected}"
        if outcome.rc != 0 or alarms(outcome.report):
            return False, f"false alarm (exit {outcome.rc}): {alarms(outcome.report)}"
    return True, ""


def table(results: dict[str, Outcome]) -> str:
    """The corpus as a Markdown table: program, expected, tfviz, agreement, time."""
    lines = [
        "| program | family | expected (TensorFlow) | tfviz | agrees | tfviz s | python s |",
        "|---|---|---|---|---|---|---|",
    ]
    for key in sorted(results):
        o = results[key]
        ok, _ = agrees(o)
        agreement = "yes" if ok else ("known miss" if o.case.missed else "NO")
        lines.append(
            f"| {key} | {o.case.family} | {expected_verdict(o)} | {tfviz_verdict(o)} | "
            f"{agreement} | {o.seconds:.1f} | {o.python_seconds:.1f} |"
        )
    return "\n".join(lines)


def test_the_corpus_covers_every_family_and_has_40_programs():
    programs = {c.program for c in cases()}
    families = {c.family for c in cases()}
    assert len(programs) >= 40, len(programs)
    for c in cases():
        assert c.pattern, f"{c.program.name} names no public pattern"
    assert len(families) >= 16, sorted(families)


def _marked(c: Case):
    marks = [pytest.mark.xfail(strict=True, reason=c.missed)] if c.missed else []
    return pytest.param(c, id=c.id, marks=marks)


@pytest.mark.parametrize("case", [_marked(c) for c in cases()])
def test_program_agrees_with_tensorflow(case, outcomes):
    outcome = outcomes[case.id]
    ok, why = agrees(outcome)
    assert ok, f"{case.id} ({case.pattern}): {why}"


def corpus_table() -> str | None:
    return table(_outcomes) if _outcomes else None


if __name__ == "__main__":  # print the table for the README: python tests/test_corpus.py
    sys.path.insert(0, str(ROOT))
    results = {}
    with ThreadPoolExecutor(max_workers=int(os.environ.get("CORPUS_JOBS", "2"))) as pool:
        for out in pool.map(run_case, cases()):
            results[out.case.id] = out
    print(table(results))
