"""The analyzed script, kept alive so that Jacobian requests need no re-run.

Built from an :class:`~tfviz.analysis.diagnose.Analysis` (:meth:`Session.from_analysis`). It
holds the step callable (a target function, or the replay of a captured program step), the
variables, the analyzed graph (its node ids are the graph view's) and the script's folder and
output capture, so a request traces the step again exactly where the analysis did, without
running the script or the program again.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from tfviz.analysis.diagnose import Analysis
from tfviz.engine.graphbuild import OpGraph
from tfviz.jacobian.chain import chain_split
from tfviz.jacobian.compute import DEFAULT_BUDGET, Progress, compute
from tfviz.jacobian.data import ChainSplit, Jacobian, JacobianError
from tfviz.jacobian.names import candidates, resolve
from tfviz.jacobian.slices import Spec


@dataclass
class Session(Analysis):
    """One analyzed script, kept for Jacobian requests: the analysis and the Jacobian blocks
    compiled so far. ``og`` is None when the step could not be traced."""

    _cache: dict[tuple[Any, ...], Any] = field(default_factory=dict)  # compiled Jacobian blocks

    @classmethod
    def from_analysis(cls, a: Analysis) -> Session:
        return cls(**{f.name: getattr(a, f.name) for f in fields(Analysis)})

    def names(self) -> list[str]:
        """Every name a request may use (``target``, variables, float tensors)."""
        return candidates(self._graph(), self.found) if self.og is not None else []

    def jacobian(
        self,
        of: str = "target",
        wrt: str = "",
        *,
        out_range: list[int] | None = None,
        in_range: list[int] | None = None,
        mode: str = "auto",
        budget: int = DEFAULT_BUDGET,
        progress: Progress | None = None,
        cancelled: Callable[[], bool] | None = None,
        of_index: Spec | None = None,
        wrt_index: Spec | None = None,
    ) -> Jacobian:
        """J(of, wrt) with shape ``of.shape + wrt.shape``, or the kept dimensions of the
        structured slices ``of_index`` / ``wrt_index``, or ``[n_out, n_in]`` for flat ranges."""
        og = self._graph()
        y = resolve(of, og, self.found, allow_variable=False, role="tensor (--of)")
        x = resolve(wrt, og, self.found, role="variable or tensor (--wrt)")
        with self._context():
            return compute(
                self.step_fn,
                og,
                y,
                x,
                out_range=out_range,
                in_range=in_range,
                mode=mode,
                budget=budget,
                progress=progress,
                cancelled=cancelled,
                cache=self._cache,
                of_index=of_index,
                wrt_index=wrt_index,
            )

    def chain(
        self,
        of: str = "target",
        wrt: str = "",
        via: str = "",
        *,
        mode: str = "auto",
        budget: int = DEFAULT_BUDGET,
        progress: Progress | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> ChainSplit:
        """The chain-rule split through ``via``: J(y,h), J(h,x), their product, J(y,x)."""
        og = self._graph()
        y = resolve(of, og, self.found, allow_variable=False, role="tensor (--of)")
        h = resolve(via, og, self.found, allow_variable=False, role="tensor (--via)")
        x = resolve(wrt, og, self.found, role="variable or tensor (--wrt)")
        done = [0]

        def part(a: Any, b: Any) -> Jacobian:
            def tick(k: int, n: int) -> None:
                if progress is not None:
                    progress(done[0] * 100 + int(100 * k / n), 300)

            j = compute(
                self.step_fn,
                og,
                a,
                b,
                mode=mode,
                budget=budget,
                progress=tick,
                cancelled=cancelled,
                cache=self._cache,
            )
            done[0] += 1
            return j

        with self._context():
            return chain_split(part, self.step_fn, og, y, h, x)

    def _graph(self) -> OpGraph:
        if self.og is None:
            raise JacobianError(
                "replay",
                f"'{self.target}' could not be traced by tf.function"
                f" ({self.trace_error or 'see the report'}), so there is no graph"
                " to take tensors from",
            )
        return self.og

    @contextlib.contextmanager
    def _context(self) -> Iterator[None]:
        """In the script's folder, with its prints captured, as during the analysis."""
        old = os.getcwd()
        os.chdir(os.path.dirname(self.script) or ".")
        try:
            with self.capture.active() if self.capture is not None else contextlib.nullcontext():
                yield
        finally:
            os.chdir(old)
