"""A program that is one task of a ``tf.distribute`` cluster job, stopped with the others.

Each worker of a ``MultiWorkerMirroredStrategy`` job runs under a ``tfviz check`` of its own
(``TF_CONFIG`` names the task). Every worker runs its program to the same step and stops there,
before the step's update: the steps before it ran their collectives on every worker, and no
worker starts the stopped step's. With ``--until``, the step's check is agreed in the step's
graph through the strategy's own all-reduce (:mod:`tfviz.program.watch`), so a condition that
fires on one worker stops all of them at that step.

What the workers then say to each other goes through TensorFlow's coordination service, which
the strategy starts on the chief: each worker puts its outcome in the service's key-value store;
the chief prints the report (the report of a worker where the condition fired, when it did not
fire on the chief) and puts the exit status every worker ends with; the others print one line.
A last barrier keeps the chief, which hosts the service, alive until every worker has read it.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: the key-value store's keys, all under one prefix of tfviz's own
_PREFIX = "tfviz/"
#: a value larger than this is put in pieces (the service's messages have a size limit)
_PIECE_CHARS = 1 << 20
#: how long the chief waits for another worker's outcome, and the others for the chief's status:
#: a worker still analyzing a large step takes as long as the chief does
OUTCOME_WAIT_S = 900
#: how long the last barrier waits for a worker that has said its outcome already
END_WAIT_S = 60


@dataclass(frozen=True)
class Task:
    """This process's task in a cluster of more than one chief or worker task."""

    job: str
    index: int
    #: its place among the chief and worker tasks, the chief first (MultiWorkerMirroredStrategy's order)
    ordinal: int
    #: how many chief and worker tasks there are
    count: int
    #: how many of them are chief tasks (0 or 1)
    chiefs: int = 0

    @property
    def chief(self) -> bool:
        return self.ordinal == 0

    @property
    def label(self) -> str:
        """``worker 1 of 2``: how the task is named in what every worker prints."""
        return _label(self.job, self.index, self.count)

    def named(self, ordinal: int) -> str:
        """The label of the task at ``ordinal`` in the same cluster."""
        return _labels(self.chiefs, self.count)[ordinal]


def _label(job: str, index: int, count: int) -> str:
    return f"{job} {index} of {count}"


def _labels(chiefs: int, count: int) -> list[str]:
    """Every task's label, in MultiWorkerMirroredStrategy's order (the chief first)."""
    return [_label("chief", i, count) for i in range(chiefs)] + [
        _label("worker", i, count) for i in range(count - chiefs)
    ]


def task_from_config(text: str | None) -> Task | None:
    """This task in ``TF_CONFIG`` when its cluster has two or more chief and worker tasks and it
    is one of them; None otherwise (no cluster, one task, an evaluator, bad JSON).

    >>> config = '{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 1}}'
    >>> task_from_config(config).label
    'worker 1 of 2'
    >>> task_from_config('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}}') is None
    True
    """
    config = _parsed(text)
    cluster, task = config.get("cluster"), config.get("task")
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        return None
    chiefs = len(cluster.get("chief") or [])
    workers = len(cluster.get("worker") or [])
    job, index = task.get("type"), task.get("index", 0)
    if job not in ("chief", "worker") or not isinstance(index, int) or chiefs + workers < 2:
        return None
    ordinal = index if job == "chief" else chiefs + index
    return Task(job, index, ordinal, chiefs + workers, chiefs)


def parameter_server_refusal(text: str | None) -> str | None:
    """Why tfviz does not run a task of a ``ParameterServerStrategy`` job (``TF_CONFIG`` names
    ``ps`` tasks); None for any other.

    >>> print(parameter_server_refusal('{"cluster": {"ps": ["a:1"], "worker": ["b:2"]}}').split(". ")[0])
    TF_CONFIG names ps tasks: a ParameterServerStrategy job
    """
    cluster = _parsed(text).get("cluster")
    if not isinstance(cluster, dict) or not cluster.get("ps"):
        return None
    return (
        "TF_CONFIG names ps tasks: a ParameterServerStrategy job. tfviz cannot stop one: its"
        " coordinator schedules each step on whichever worker is free and carries on without"
        " waiting, and the workers run the steps in servers that never call back into Python, so"
        " no step can be held before its update. Check the same model and step without the"
        " cluster (tfviz check train.py with TF_CONFIG unset), or under MirroredStrategy or"
        " MultiWorkerMirroredStrategy"
    )


def _parsed(text: str | None) -> dict[str, Any]:
    try:
        config = json.loads(text or "{}")
    except ValueError:
        return {}
    return config if isinstance(config, dict) else {}


def joined(environ: Mapping[str, str] | None = None) -> Task | None:
    """This process's task when its program joined the cluster (a ``MultiWorkerMirroredStrategy``
    started TensorFlow's coordination service for it); None when it did not."""
    import sys

    task = task_from_config((environ if environ is not None else os.environ).get("TF_CONFIG"))
    if task is None or "tensorflow" not in sys.modules:
        return None
    from tensorflow.python.eager import context

    return task if context.context().coordination_service else None


def replica_labels(strategy: Any, count: int) -> list[str]:
    """A name for each of a strategy's ``count`` replicas, by global replica id: the worker
    that runs it (and its device where a worker runs several), or its device."""
    devices = list(getattr(strategy.extended, "worker_devices", ()) or ())
    local = max(1, len(devices))
    task = task_from_config(os.environ.get("TF_CONFIG"))
    if task is not None and count == task.count * local:
        tasks = _labels(task.chiefs, task.count)
        if local == 1:
            return tasks
        return [f"{tasks[r // local]}, replica {r % local}" for r in range(count)]
    return [
        f"replica {r} ({devices[r].rsplit('/', 1)[-1].removeprefix('device:')})"
        if r < len(devices)
        else f"replica {r}"
        for r in range(count)
    ]


# -- the coordination service --------------------------------------------------------------


def put(key: str, value: str) -> None:
    """``value`` under ``key`` in the cluster's key-value store, in pieces when it is large."""
    from tensorflow.python.eager import context

    ctx = context.context()
    pieces = [value[i : i + _PIECE_CHARS] for i in range(0, len(value), _PIECE_CHARS)] or [""]
    for i, piece in enumerate(pieces):
        ctx.set_config_key_value(f"{_PREFIX}{key}/{i}", piece)
    ctx.set_config_key_value(f"{_PREFIX}{key}", str(len(pieces)))  # last: a reader waits on it


def get(key: str, timeout_s: float = OUTCOME_WAIT_S) -> str:
    """The value another task put under ``key``, waiting up to ``timeout_s`` for it; raises
    TensorFlow's error when it does not come (a timeout, the service gone)."""
    from tensorflow.python.eager import context

    ctx = context.context()
    count = int(ctx.get_config_key_value(f"{_PREFIX}{key}", int(timeout_s * 1000)))
    return "".join(ctx.get_config_key_value(f"{_PREFIX}{key}/{i}", 1000) for i in range(count))


def barrier(name: str, timeout_s: float) -> None:
    """Wait until every task of the cluster is at barrier ``name``; raises TensorFlow's error
    when one does not come in time or is gone."""
    from tensorflow.python.eager import context

    context.context().wait_at_barrier(f"{_PREFIX}{name}", int(math.ceil(timeout_s * 1000)))


def said(exc: BaseException) -> str:
    """TensorFlow's error, in one line: its message without the graph's stack."""
    message = getattr(exc, "message", None) or str(exc)
    first = message.strip().splitlines()[0] if message.strip() else type(exc).__name__
    return f"{type(exc).__name__}: {first}"


#: TensorFlow's errors a collective raises when a peer is gone
_LOST = ("UnavailableError", "AbortedError", "CancelledError", "DeadlineExceededError")
_PEER = re.compile(r"/job:(\w+)/replica:\d+/task:(\d+)")


def lost_peer(exc: BaseException, steps: int) -> str | None:
    """What to say when the program failed because another task of the cluster went away
    during a collective (it crashed, was killed or stopped first): the peer, the step, and
    TensorFlow's reason in one line, without the graph's stack; None for any other error, or
    outside a cluster."""
    task = joined()
    message = getattr(exc, "message", None) or str(exc)
    if task is None or not (type(exc).__name__ in _LOST or "Collective ops is aborted" in message):
        return None
    peers = {
        _label(job, int(index), task.count)
        for job, index in _PEER.findall(message)
        if (job, int(index)) != (task.job, task.index)
    }
    who = ", ".join(sorted(peers)) or "another worker"
    reason = next((line.strip() for line in message.splitlines() if "aborted by" in line), "")
    reason = reason or said(exc)
    return (
        f"lost {who} in gradient step {steps + 1}: a collective of the step could not reach it (it"
        f" crashed, was killed or stopped first). TensorFlow: {reason}"
    )


def own_record(record: str, environ: Mapping[str, str]) -> str:
    """Where this task writes ``--record``: every worker writes its own, the chief at the path
    given, another worker beside it, named for its task (a folder of TensorBoard event files
    gets a folder of its own inside, which TensorBoard shows as a run of its own).

    >>> env = {"TF_CONFIG": '{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 1}}'}
    >>> own_record("norms.csv", env), own_record("runs/", env)
    ('norms.worker-1.csv', 'runs/worker-1/')
    """
    task = task_from_config(environ.get("TF_CONFIG"))
    if task is None or task.chief:
        return record
    name = f"{task.job}-{task.index}"
    if record.endswith(os.sep) or os.path.isdir(record):
        return os.path.join(record, name) + os.sep
    stem, ext = os.path.splitext(record)
    return f"{stem}.{name}{ext}"
