"""How the workers of a cluster job end their checks together (see :mod:`tfviz.program.cluster`).

Every worker has analyzed its own replica of the step they all stopped at. Each says its
outcome through the coordination service; the chief answers with the report (its own, or that
of a worker where ``--until``'s condition fired when it did not fire on the chief) and the exit
status; every other worker answers with one line and that status. A worker whose program
failed instead says so and leaves at once: the others, waiting in a collective for it, then
lose it and say so too, and the chief names the first failure as the cause.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tfviz.exitstatus import ExitStatus
from tfviz.program import cluster
from tfviz.worker.messages import Failure, Result

#: how long a worker that failed waits for the others' outcomes, to name the first failure
FAILED_WAIT_S = 5.0

Render = Callable[[Any], Result]


@dataclass
class Ending:
    """One worker's end of the check: :meth:`settle` before it answers, :meth:`leave` after."""

    task: cluster.Task
    #: what the command prints (``--format``): the other workers' line is printed so too
    format: str = "text"
    #: whether every worker will wait at the last barrier
    _barrier: bool = False

    def settle(
        self, failure: Failure | None, status: int, report: Any, render: Render, step: int | None
    ) -> tuple[Result | Failure, int]:
        """The answer this worker gives and the status it ends with, agreed with the others:
        ``failure`` when its analysis failed, else ``report``, its Report; ``render`` makes the
        Result for a report; ``step`` is the gradient step asked for (None: ``--until`` finds it)."""
        try:
            if self.task.chief:
                return self._as_chief(failure, status, report, render, step)
            return self._as_worker(failure, report, step)
        except Exception as exc:  # noqa: BLE001 - the service's errors are TensorFlow's, of many kinds
            return self._lost(failure, exc)

    def leave(self) -> None:
        """Wait for the others at the last barrier (the chief hosts the service: it stays until
        every worker has read the status), where they all will come."""
        if self._barrier:
            try:
                cluster.barrier("end", cluster.END_WAIT_S)
            except Exception:  # noqa: BLE001 - a worker gone at the very end: nothing is left to say
                pass

    # -- the chief ------------------------------------------------------------------------------
    def _as_chief(
        self, failure: Failure | None, status: int, report: Any, render: Render, step: int | None
    ) -> tuple[Result | Failure, int]:
        # one deadline for all of them: a failed chief waits briefly for a cause to name
        deadline = time.monotonic() + (FAILED_WAIT_S if failure is not None else cluster.OUTCOME_WAIT_S)
        outcomes: dict[int, dict[str, Any]] = {}
        lost: dict[int, str] = {}
        for ordinal in range(1, self.task.count):
            try:
                wait = max(0.001, deadline - time.monotonic())
                outcomes[ordinal] = json.loads(cluster.get(f"outcome/{ordinal}", wait))
            except Exception as exc:  # noqa: BLE001 - gone, or not there in time
                lost[ordinal] = cluster.said(exc)
        peer_failures = {o: out["error"] for o, out in outcomes.items() if out.get("error") is not None}
        answer: Result | Failure
        if failure is not None:
            answer = self._failure(failure, peer_failures)
        elif peer_failures or lost:
            answer, status = self._failure(None, peer_failures, lost), ExitStatus.ERROR
        else:
            shown, whose = report, self.task.label
            fired = _fired_report(report, outcomes, self.task)
            if fired is not None:
                shown, whose = fired
            at = _step_of(shown, step)
            shown.notes.append(
                f"{self.task.count} workers of a cluster job (TF_CONFIG): every worker stopped at"
                f" gradient step {at}, before its update; this is {whose}'s replica of the step"
                " (each worker differentiates its own batch)"
            )
            answer = render(shown)
            status = ExitStatus.OK if shown.ok else ExitStatus.PROBLEMS
        waiting = failure is None and not lost and all(out.get("waits") for out in outcomes.values())
        cluster.put("status", json.dumps({"status": int(status), "barrier": waiting}))
        self._barrier = waiting
        return answer, int(status)

    def _failure(
        self, failure: Failure | None, peers: dict[int, dict[str, Any]], lost: dict[int, str] | None = None
    ) -> Failure:
        """The chief's failure, led by the first other worker's own failure when there is one
        (the chief then only lost it), or naming the workers it lost."""
        error = dict(failure.error) if failure is not None else {}
        if peers:
            first = dict(peers[min(peers)])
            mine = f"{self.task.label}: {error['message']}" if error.get("message") else ""
            first["detail"] = "\n".join(x for x in (first.get("detail") or "", mine) if x)
            return Failure(first)
        said = "; ".join(f"{self.task.named(o)}: {why}" for o, why in sorted((lost or {}).items()))
        if failure is None:
            return Failure({"message": f"{self.task.label}: lost the other workers ({said})"})
        if said:
            error["detail"] = "\n".join(x for x in (error.get("detail") or "", said) if x)
        error["message"] = f"{self.task.label}: {error.get('message', '')}"
        return Failure(error)

    # -- the other workers ----------------------------------------------------------------------
    def _as_worker(
        self, failure: Failure | None, report: Any, step: int | None
    ) -> tuple[Result | Failure, int]:
        label = self.task.label
        if failure is not None:
            error = {**failure.error, "message": f"{label}: {failure.error.get('message', '')}"}
            cluster.put(f"outcome/{self.task.ordinal}", json.dumps({"error": error, "waits": False}))
            return Failure(error), ExitStatus.ERROR
        mine = _fired_here(report, self.task)
        outcome = {"waits": True, "report": report.to_dict() if mine else None}
        cluster.put(f"outcome/{self.task.ordinal}", json.dumps(outcome, allow_nan=True))
        agreed = json.loads(cluster.get("status"))
        self._barrier = agreed.get("barrier") is True
        status = int(agreed.get("status", ExitStatus.ERROR))
        where = f"stopped at gradient step {_step_of(report, step)}"
        if mine:
            where += f" ({report.watch.fired} fired here)"
        line = f"{label}: {where}; the chief reports"
        watch = getattr(report, "watch", None)
        if watch is not None and watch.record:
            line += f" (this worker's record: {watch.record})"
        from tfviz.reportformats import deferred

        printed = deferred(line, label, _step_of(report, step), status, self.format)
        return Result({"ok": status == ExitStatus.OK}, printed=printed, status=status), status

    def _lost(self, failure: Failure | None, exc: BaseException) -> tuple[Failure, int]:
        """The service failed under us: the chief (which hosts it) or another worker is gone."""
        who = "the other workers" if self.task.chief else "the chief"
        why = f"lost {who} ({cluster.said(exc)})"
        if failure is not None:  # its own failure says what happened first; the service's, after
            error = dict(failure.error)
            error["message"] = f"{self.task.label}: {error.get('message', '')}"
            error["detail"] = "\n".join(x for x in (error.get("detail") or "", why) if x)
            return Failure(error), ExitStatus.ERROR
        return Failure({"message": f"{self.task.label}: {why}"}), ExitStatus.ERROR


def _fired_here(report: Any, task: cluster.Task) -> bool:
    watch = getattr(report, "watch", None)
    return bool(watch is not None and watch.fired and task.label in (watch.fired_on or []))


def _fired_report(
    report: Any, outcomes: dict[int, dict[str, Any]], task: cluster.Task
) -> tuple[Any, str] | None:
    """The report of the first other worker where ``--until``'s condition fired, with its
    label, when it did not fire on the chief; None to print the chief's own."""
    if report is None or _fired_here(report, task):
        return None
    from tfviz.report import Report

    for ordinal in sorted(outcomes):
        data = outcomes[ordinal].get("report")
        if isinstance(data, dict):
            return Report.from_dict(data), task.named(ordinal)
    return None


def _step_of(report: Any, step: int | None) -> int | None:
    """The step every worker stopped at: the one asked for, or the one ``--until`` found."""
    watch = getattr(report, "watch", None)
    if watch is not None and watch.step is not None:
        return int(watch.step)
    return step
