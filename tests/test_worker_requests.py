"""A kept worker session's requests are checked into typed messages:
a request whose ``id`` is not a string or a number used to kill the session (a TypeError
in the loop's ``finally``), and a ``cancel`` with such an id killed the thread reading
the pipe, so the worker hung even after its stdin closed."""

from __future__ import annotations

import json
import os
import subprocess
import threading

import pytest

from tests.conftest import EXAMPLES, ROOT
from tfviz.worker.launch import worker_command, worker_environment
from tfviz.worker.requests import (
    AnalyzeRequest,
    BadRequest,
    CancelRequest,
    CloseRequest,
    JacobianRequest,
    NamesRequest,
    checked_requests,
    parse_request,
)


@pytest.mark.parametrize(
    "line, expected",
    [
        ({"cmd": "names", "id": "a"}, NamesRequest("a")),
        ({"cmd": "names", "id": 2.5}, NamesRequest(2.5)),
        ({"cmd": "cancel"}, CancelRequest(None)),
        ({"cmd": "close"}, CloseRequest()),
        (
            {"cmd": "analyze", "id": 1, "script": "x.py", "keep": True},
            AnalyzeRequest(1, "x.py", options={"run": False, "args": [], "step": 1}, keep=True),
        ),
        (
            {
                "cmd": "jacobian",
                "id": 7,
                "wrt": "W",
                "via": "h",
                "out_range": [0, 2],
                "budget_mb": 8,
                "mode": None,
            },
            JacobianRequest(7, "W", via="h", out_range=(0, 2), budget_mb=8.0),
        ),
    ],
)
def test_good_requests_become_typed_messages(line, expected):
    assert parse_request(json.dumps(line).encode()) == expected


@pytest.mark.parametrize(
    "line, rid, why",
    [
        (b'{"cmd": "names", "id": [1]}', None, '"id" must be a string or a number, got [1]'),
        (b'{"cmd": "cancel", "id": {"x": 1}}', None, '"id" must be a string or a number'),
        (b'{"cmd": "names", "id": true}', None, '"id" must be a string or a number, got True'),
        (b'{"cmd": "names", "id": NaN}', None, '"id" must be a string or a number, got nan'),
        (b'{"cmd": "jacobian", "id": "j", "wrt": 3}', "j", '"wrt" must be a name, got 3'),
        (b'{"cmd": "jacobian", "id": "j", "wrt": "W", "in_range": "0:2"}', "j", '"in_range" must be'),
        (b'{"cmd": "jacobian", "id": "j", "wrt": "W", "budget_mb": -1}', "j", '"budget_mb" must be a'),
        (b'{"cmd": "jacobian", "id": "j", "wrt": "W", "mode": "sideways"}', "j", '"mode" must be "auto"'),
        (b'{"cmd": "jacobian", "id": "j", "wrt": "W", "encoding": null}', "j", '"encoding" must be'),
        (b'{"cmd": "explode", "id": 4}', 4, "unknown command: 'explode'"),
        (b"[1, 2]", None, "expected a JSON object, got list"),
        (b"{not json", None, "not JSON"),
        (b"\xff\xfe", None, "not JSON"),
        (b"[" * 100_000, None, "not JSON"),
    ],
)
def test_bad_requests_say_what_is_wrong_and_keep_a_good_id(line, rid, why):
    bad = parse_request(line)
    assert isinstance(bad, BadRequest) and bad.id == rid and why in bad.why and len(bad.why) < 200


def test_the_checked_stream_parses_each_line_once_and_ends_when_the_pipe_breaks():
    def pipe():
        yield b'{"cmd": "names", "id": 1}\n'
        yield b"\n"
        yield b'{"cmd": "cancel", "id": [2]}\n'
        raise OSError("the pipe broke")

    out = list(checked_requests(pipe()))  # ends, never raises: the session loop sees the end
    assert out[0] == NamesRequest(1) and len(out) == 2
    assert out[1] == BadRequest(None, '"id" must be a string or a number, got [2]')


def test_the_session_loop_answers_bad_ids_serves_on_and_ends_with_its_pipe():
    """The real session loop, fed from a pipe through the checked stream, with a stand-in
    session (no TensorFlow): every request answered in order, and the loop ends when the
    pipe closes."""
    from tfviz.worker.session import serve_session

    class Names:
        def names(self) -> list[str]:
            return ["W", "h"]

    sent: list[dict] = []
    r, w = os.pipe()
    requests = os.fdopen(r, "rb")
    ended = threading.Event()
    t = threading.Thread(
        target=lambda: (serve_session(sent.append, Names(), checked_requests(requests)), ended.set()),
        daemon=True,
    )
    t.start()
    with os.fdopen(w, "wb") as fh:
        for line in (
            {"cmd": "names", "id": [1]},
            {"cmd": "cancel", "id": {"x": 1}},
            {"cmd": "names", "id": {"y": 2}},
            {"cmd": "names", "id": "after"},
        ):
            fh.write(json.dumps(line).encode() + b"\n")
    assert ended.wait(30), "the session loop did not end when its pipe closed"
    assert [(m["type"], m["id"]) for m in sent] == [("jacobian_error", None)] * 3 + [("names", "after")]
    assert all(
        m["error"]["kind"] == "bad_request" and '"id" must be a string or a number' in m["error"]["message"]
        for m in sent[:3]
    )


def _worker(lines: list[dict | str], timeout: float = 240) -> tuple[int, list[dict], str]:
    """Run a real worker: an analysis kept as a session, then ``lines``; stdin closes."""
    first = {"cmd": "analyze", "script": str(EXAMPLES / "seed3_chain_rule_split.py"), "keep": True}
    text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in [first, *lines])
    r = subprocess.run(
        worker_command(),
        env=worker_environment(),
        cwd=ROOT,
        input=text,
        text=True,
        capture_output=True,
        timeout=timeout,
    )
    return r.returncode, [json.loads(x) for x in r.stdout.splitlines()], r.stderr


def test_a_request_with_a_list_id_gets_an_error_and_the_session_serves_on():
    code, msgs, err = _worker(
        [
            {"cmd": "names", "id": [1]},
            "{not json",
            {"cmd": "jacobian", "id": "j", "wrt": "W", "out_range": "all"},
            {"cmd": "names", "id": "after"},
        ]
    )
    assert code == 0, err[-3000:]
    answers = [m for m in msgs if m["type"] in ("names", "jacobian_error")]
    assert [(m["type"], m.get("id")) for m in answers] == [
        ("jacobian_error", None),
        ("jacobian_error", None),
        ("jacobian_error", "j"),
        ("names", "after"),
    ]
    assert '"id" must be a string or a number, got [1]' in answers[0]["error"]["message"]
    assert all(m["error"]["kind"] == "bad_request" for m in answers[:3])
    assert "h" in answers[3]["names"] and "Traceback" not in err


def test_a_cancel_with_an_object_id_does_not_hang_the_worker_when_stdin_closes():
    code, msgs, err = _worker([{"cmd": "cancel", "id": {"x": 1}}, {"cmd": "names", "id": 2}])
    assert code == 0, err[-3000:]
    answers = [(m["type"], m.get("id")) for m in msgs if m["type"] in ("names", "jacobian_error")]
    assert answers == [("jacobian_error", None), ("names", 2)] and "Traceback" not in err
