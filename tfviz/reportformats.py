"""What ``tfviz check`` prints, in each ``--format``: the text report, the JSON check document,
GitHub Actions workflow commands and SARIF 2.1.0. The worker and the command both print
through :func:`formatted` (and :func:`failure` when there is no report): one place renders.

Paths in GitHub annotations and SARIF results are relative to the folder the command runs
in, as CI runs it at the repository's root; a file outside it keeps its absolute path.

>>> from tfviz.report import Problem, Report, Source
>>> r = Report(script="t.py", target="loss", problems=[Problem("stop_gradient", "error",
...     "sg", "StopGradient", "blocks the gradient, 100%", ["w"], Source("t.py", 7))])
>>> github_lines(r)
['::error file=t.py,line=7,title=tfviz%3A stop_gradient::blocks the gradient, 100%25 (variables: w)']
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tfviz.report import Problem, Report, Source, strict_json
from tfviz.version import __version__
from tfviz.vocabulary import KIND_HELP, MAGNITUDE, Kind, Severity

FORMATS: tuple[str, ...] = ("text", "json", "github", "sarif")
#: the version of the ``--json`` check document (``tfviz/schemas/tfviz-check.schema.json``)
CHECK_SCHEMA_VERSION = 1
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/tfviz/"
_COMMANDS: dict[str, str] = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
_LEVELS: dict[str, str] = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def formatted(report: Report, fmt: str, color: bool = False) -> str:
    """The report as ``fmt`` prints it (one of :data:`FORMATS`)."""
    if fmt == "json":
        return strict_json({"schema_version": CHECK_SCHEMA_VERSION, **report.fields(full_graph=False)}, 2)
    if fmt == "sarif":
        return json.dumps(sarif_log(report), indent=2, ensure_ascii=False)
    from tfviz.textreport import render

    text = render(report, color=color)
    if fmt == "github":
        return "\n".join([text, *github_lines(report)])
    return text


def failure(error: dict[str, Any], fmt: str) -> str | None:
    """What goes to stdout when the script could not be analyzed (the error's line goes to
    stderr as well): the JSON error document, an annotation at the failing line, or a SARIF
    log whose invocation failed, so that a CI upload step still has a valid file. None for text."""
    if fmt == "json":
        return json.dumps(
            {"schema_version": CHECK_SCHEMA_VERSION, "tfviz": __version__, "ok": False, "error": error}
        )
    message = str(error.get("message") or "the script could not be analyzed")
    where = _source(error.get("file"), error.get("line"))
    if fmt == "github":
        return _command("error", "tfviz could not analyze the script", message, where)
    if fmt == "sarif":
        notice: dict[str, Any] = {"level": "error", "message": {"text": message}}
        if where is not None:
            notice["locations"] = [_location(where)]
        log = _log([])
        log["runs"][0]["invocations"] = [
            {"executionSuccessful": False, "toolExecutionNotifications": [notice]}
        ]
        return json.dumps(log, indent=2, ensure_ascii=False)
    return None


def deferred(line: str, worker: str, step: int | None, status: int, fmt: str) -> str:
    """What a worker of a cluster job that is not the chief prints (the chief prints the
    report): its one line; as JSON, a document saying the same; as SARIF, a log without
    results whose invocation notes it, so that every worker's output is still a valid file."""
    if fmt == "json":
        return json.dumps(
            {
                "schema_version": CHECK_SCHEMA_VERSION,
                "tfviz": __version__,
                "ok": status == 0,
                "worker": worker,
                "stopped_at": step,
                "reported_by": "chief",
            }
        )
    if fmt == "sarif":
        log = _log([])
        notice = {"level": "note", "message": {"text": line}}
        log["runs"][0]["invocations"] = [
            {"executionSuccessful": True, "toolExecutionNotifications": [notice]}
        ]
        return json.dumps(log, indent=2, ensure_ascii=False)
    return line


# -- GitHub Actions ------------------------------------------------------------------------


def github_lines(report: Report) -> list[str]:
    """One workflow command per problem: ``::error`` for an error, ``::warning`` for a
    warning, ``::notice`` for information, each at the problem's line in the user's code."""
    return [
        _command(_COMMANDS.get(p.severity, "warning"), f"tfviz: {p.kind}", _said(p), p.source)
        for p in report.problems
    ]


def _command(command: str, title: str, message: str, where: Source | None) -> str:
    props = [f"file={_property(_shown(where.file))}"] if where is not None else []
    if where is not None and where.line > 0:
        props.append(f"line={where.line}")
    props.append(f"title={_property(title)}")
    return f"::{command} {','.join(props)}::{_data(message)}"


def _data(text: str) -> str:
    """A workflow command's message, escaped as GitHub's toolkit escapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _said(p: Problem) -> str:
    """The problem's message, the variables it keeps from training, and its hint."""
    text = p.message
    if p.variables:
        text += f" (variables: {', '.join(p.variables)})"
    if p.hint:
        text += f"\n{p.hint}"
    return text


# -- SARIF ---------------------------------------------------------------------------------


def sarif_log(report: Report) -> dict[str, Any]:
    """SARIF 2.1.0: one rule per kind (what it means, how it is usually mended), one result
    per problem at its line."""
    index = {kind.value: i for i, kind in enumerate(Kind)}
    results = []
    for p in report.problems:
        result: dict[str, Any] = {
            "ruleId": p.kind,
            "level": _LEVELS.get(p.severity, "warning"),
            "message": {"text": _said(p)},
            "properties": {"op": p.op, "opType": p.op_type, "variables": list(p.variables)},
        }
        if p.kind in index:
            result["ruleIndex"] = index[p.kind]
        where = p.source or _source(report.script, None)
        if where is not None:
            result["locations"] = [_location(where)]
        results.append(result)
    log = _log(results)
    log["runs"][0]["invocations"] = [{"executionSuccessful": True}]
    return log


def _log(results: list[dict[str, Any]]) -> dict[str, Any]:
    rules = [
        {
            "id": kind.value,
            "name": "".join(w.capitalize() for w in kind.value.split("_")),
            "shortDescription": {"text": KIND_HELP[kind][0]},
            "fullDescription": {"text": KIND_HELP[kind][0]},
            "help": {"text": KIND_HELP[kind][1]},
            "defaultConfiguration": {
                "level": "warning" if kind in MAGNITUDE else "note" if kind == Kind.CANCELLED else "error"
            },
        }
        for kind in Kind
    ]
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "tfviz",
                "version": __version__,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }
        },
        "results": results,
    }
    from tfviz.textreport import base_folder

    base = base_folder()
    if base is not None:  # None: the folder it runs in is gone
        run["originalUriBaseIds"] = {"%SRCROOT%": {"uri": Path(base).as_uri() + "/"}}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def _location(where: Source) -> dict[str, Any]:
    shown = _shown(where.file)
    artifact: dict[str, Any] = (
        {"uri": Path(shown).as_uri()} if os.path.isabs(shown) else {"uri": shown, "uriBaseId": "%SRCROOT%"}
    )
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if where.line and where.line > 0:
        physical["region"] = {"startLine": where.line}
    return {"physicalLocation": physical}


def _source(file: Any, line: Any) -> Source | None:
    return Source(file, line if isinstance(line, int) else 0) if isinstance(file, str) and file else None


def _shown(path: str) -> str:
    """``path`` relative to the command's folder, with forward slashes, when it is inside it."""
    from tfviz.textreport import shown_path

    shown = shown_path(path)
    return shown if shown == path else Path(shown).as_posix()
