"""Watching every gradient step of a running program (``tfviz check --until``).

Each gradient computation the program makes is measured where it is made: per
source, the gradient's norm and whether every element is finite, and the
loss's finiteness. The rules below read those figures after every step and
fire at the first step where the chosen condition holds.

**Cheap by construction.** A ``tf.function`` step is traced once, as the
program traces it: the measurements are ops added to that trace, and the step
is never traced again. The graph itself decides whether a rule could fire on
the step (:meth:`Watch._gate`): a quiet step keeps its figures in one variable
of the graph's own and never calls into Python; a suspect one calls back once
(one tensor, not one sync per variable). That callback sits between the
gradients and whatever consumes them (the optimizer), so when a rule fires it
stops the step's graph there, *before* the update: the variables stay as the
step found them, and the usual engine diagnoses that step. With a record or
the live view every step calls back, for every step is written. An eager
step is measured in Python right after its gradient call, before the program
can apply it.

**The rules** (:data:`CONDITIONS`):

- ``nan``: a gradient or the loss is not finite;
- ``none``: a source whose gradient is None now had one at an earlier step;
- ``zero``: a source's gradient has been exactly zero for ``zero_steps`` steps in a row;
- ``vanishing`` / ``exploding``: the magnitude rule of the report
  (:mod:`tfviz.engine.magnitude`). Without the step's graph the variables nearest
  the loss are taken to be the last tenth of the sources, in the order the
  program lists them (the order of ``model.trainable_variables``: input first);
  the diagnosis of the step that fired then applies the rule with the graph.
"""

from __future__ import annotations

import csv
import math
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from tfviz.engine import magnitude
from tfviz.outputs import match_mode
from tfviz.program.capture import loss_scale
from tfviz.program.frames import local_index
from tfviz.program.layerpoints import layer_of, layer_point
from tfviz.report import VariableReport, WatchedLayer, WatchSummary

CONDITIONS = ("nan", "none", "zero", "vanishing", "exploding")
#: ``zero``: how many steps in a row a gradient must be exactly zero, by default
ZERO_STEPS = 5


def parse_until(text: str) -> list[str]:
    """``"nan,zero"`` -> ``['nan', 'zero']``; ``all`` is every condition.

    >>> parse_until("nan, none")
    ['nan', 'none']
    >>> parse_until("inf")
    Traceback (most recent call last):
    ...
    ValueError: unknown condition 'inf': choose from nan, none, zero, vanishing, exploding (or all)
    """
    names: list[str] = []
    for part in text.split(","):
        name = part.strip().lower()
        if name == "all":
            return list(CONDITIONS)
        if name not in CONDITIONS:
            raise ValueError(f"unknown condition {name!r}: choose from {', '.join(CONDITIONS)} (or all)")
        if name not in names:
            names.append(name)
    return names


@dataclass
class Fired:
    """The first step at which a condition held."""

    condition: str
    #: the program's gradient computation, counted from 1
    step: int
    #: which gradient computation of its tf.function call (1 for a usual train step)
    ordinal: int
    variables: list[str]
    detail: str


@dataclass
class _Seen:
    """One source across the steps."""

    name: str
    size: int
    #: its number of dimensions: a kernel is compared with kernels (magnitude.role)
    rank: int = 1
    had_gradient: bool = False
    zero_run: int = 0
    steps: int = 0
    first: float | None = None
    last: float | None = None
    low: float = math.inf
    high: float = 0.0


@dataclass
class _Span:
    """One layer's gradient norm across the steps: each step's is the root of its variables'
    squared norms at that step, so that its lowest and highest are of the same measure as its
    first and last (the highest of its variables' own norms can be below the layer's last)."""

    first: float | None = None
    last: float | None = None
    low: float = math.inf
    high: float = 0.0

    def add(self, first: float, last: float, low: float, high: float) -> None:
        """Steps whose first and last norms, lowest and highest are given (one step: all one)."""
        self.first = first if self.first is None else self.first
        self.last = last
        self.low, self.high = min(self.low, low), max(self.high, high)


class _Quiet:
    """What one traced step keeps, in the graph, of the steps no rule could fire on (see
    :meth:`Watch._gate`): per present source its first, last, lowest and highest norm and its
    run of zeros at the end, the same of each layer's norm (:class:`_Span`), and how many
    such steps there were. Python reads it only when it needs it (:meth:`Watch.drain`): a
    quiet step costs a few ops, not a call into Python."""

    def __init__(self, described: _Described) -> None:
        import numpy as np
        import tensorflow as tf
        from tensorflow.python.ops import resource_variable_ops

        keys, names, sizes, present = described
        self.rows = [(k, nm, sz) for k, nm, sz, has in zip(keys, names, sizes, present) if has]
        #: the layers of the rows, and each row's layer by its index there
        self.layers = list(dict.fromkeys(layer_of(nm) for _, nm, _ in self.rows))
        self._segments = [self.layers.index(layer_of(nm)) for _, nm, _ in self.rows]
        n = len(self.rows) + len(self.layers)

        def var(value: Any) -> Any:
            # Made outside the trace, and past tf.function's variable creator, which refuses
            # a variable made by any trace but the first.
            with tf.init_scope():
                return resource_variable_ops.ResourceVariable(value, trainable=False)

        # one variable, one assign a step: rows first, last, low, high, zeros-at-the-end, count;
        # a column per source, then one per layer
        start = np.zeros((6, n), np.float32)
        start[2] = np.inf
        self.state = var(start)
        self.n = n

    def update(self, norms: Any) -> Any:
        """The ops of one quiet step (all norms finite)."""
        import tensorflow as tf

        if self.layers:  # each layer's norm, summed in float64 (norms past 1.8e19 square past float32)
            wide = tf.cast(norms, tf.float64)
            squares = tf.math.unsorted_segment_sum(wide * wide, self._segments, len(self.layers))
            norms = tf.concat([norms, tf.cast(tf.sqrt(squares), tf.float32)], 0)
        first, _, low, high, zeros, count = tf.unstack(self.state.read_value())
        kept = self.state.assign(
            tf.stack(
                [
                    tf.where(count > 0.0, first, norms),
                    norms,
                    tf.minimum(low, norms),
                    tf.maximum(high, norms),
                    tf.where(tf.equal(norms, 0.0), zeros + 1.0, tf.zeros_like(norms)),
                    count + 1.0,
                ]
            ),
            read_value=False,
        )
        with tf.control_dependencies([kept]):
            return tf.constant(True)

    def take(self) -> tuple[int, list[list[float]]]:
        """How many quiet steps since the last take, and their figures; then starts afresh."""
        import numpy as np

        state = self.state.numpy()
        n = int(state[5][0]) if self.n else 0
        if not n:
            return 0, []
        fresh = np.zeros_like(state)
        fresh[2] = np.inf
        self.state.assign(fresh)
        return n, [row.tolist() for row in state[:5]]


#: per source: its key, its record name, its size, whether it has a gradient (see :func:`_describe`)
_Described = tuple[list[int], list[str], list[int], list[bool]]


class RanToEnd(Exception):
    """The watched program finished before any condition fired, or its ``--max-steps``."""

    def __init__(self, steps: int) -> None:
        super().__init__(f"the program ended after {steps} gradient computation(s)")
        self.steps = steps


class WatchStop(Exception):
    """Raised in a step's host callback to stop its graph before the update."""


@dataclass
class Watch:
    """The rules and what they have seen; the handler calls it at every gradient step."""

    until: list[str]
    zero_steps: int = ZERO_STEPS
    record: str | None = None
    #: the temporary the record is written to, beside it, made by the client before the
    #: program starts (``check`` finishes it if Ctrl-C ends the worker); None: made here
    record_tmp: str | None = None
    #: ``--record DIR/``: the folder of TensorBoard's event files (:mod:`tfviz.program.tensorboard`)
    tensorboard: str | None = None
    #: gradient computations the program had made before the running tf.function call
    base: int = 0
    steps: int = 0
    fired: Fired | None = None
    seen: dict[int, _Seen] = field(default_factory=dict)
    #: each layer's norm across the steps, by layer (:func:`~tfviz.program.layerpoints.layer_of`)
    layers: dict[str, _Span] = field(default_factory=dict)
    #: the loss scale of each step whose scaled gradients were not finite at a scale above 1,
    #: which the LossScaleOptimizer skips: no ``nan`` of the program's (see :meth:`_rules`)
    scaled_overflows: list[float] = field(default_factory=list)
    #: each source's number of dimensions, by key (see _note_ranks)
    ranks: dict[int, int] = field(default_factory=dict)
    _out: IO[str] | None = None
    _writer: Any = None
    #: the record's rows of the latest step, by variable, until its update is known
    _rows: dict[str, list[Any]] = field(default_factory=dict)
    #: why the record could not be written ("" when it was, or none was asked for)
    record_error: str = ""
    #: what the user should know about how the program was watched
    notes: list[str] = field(default_factory=list)
    #: gets each step's figures per layer as soon as its update is known (the window's Training dock)
    live: Callable[[dict[str, Any]], None] | None = None
    #: the traced steps' in-graph figures of quiet steps, not yet read (see :class:`_Quiet`)
    _quiet: list[_Quiet] = field(default_factory=list)
    #: the graph last traced and its last watched step's ops: a second step in the same trace
    #: runs after the first's, so its check reads the first's figures complete
    _chain: tuple[Any, list[Any]] = (None, [])
    _events: Any = None
    #: the latest step observed in Python (a step kept quietly in a graph is not)
    last_step: int = 0
    #: the latest step's gradient histograms, by variable, until its rows are written
    _histograms: dict[str, list[float]] = field(default_factory=dict)
    #: under a strategy with several replicas: the replicas the condition fired on, by name
    fired_on: list[str] = field(default_factory=list)
    #: the first of this process's replicas it fired on (the one captured)
    fired_local: int = 0
    #: the step whose agreement this process has taken (each local replica calls back)
    _agreed_step: int = 0
    _agreeing: Any = field(default_factory=threading.Lock)
    #: each replica's checks waiting for its update's agreement, by graph and replica
    _rides: dict[tuple[Any, int], list[_Ride]] = field(default_factory=dict)
    #: whether the agreement may ride the optimizer's all-reduce (False: always one of its own)
    ride: bool = True

    @property
    def detailed(self) -> bool:
        """Whether each step's weight and update norms are measured too (record, live view)."""
        return self.record is not None or self.live is not None or self.tensorboard is not None

    # -- measuring (TensorFlow) --------------------------------------------------
    def wrap(self, sources: Any, grads: Any, target: Any, ordinal: int, scaler: Any = None) -> Any:
        """The gradients of a step being traced, made to pass through the step's check.
        ``scaler``: the LossScaleOptimizer that scaled the loss they are of (its scale is read
        as each step runs)."""
        import tensorflow as tf

        described = _describe(sources, grads)
        self._note_ranks(sources, described)
        packed = _measure(sources, grads, target, self.detailed, self.tensorboard is not None)

        def callback(values: Any) -> Any:
            self._observe_packed(self.base + ordinal, ordinal, described, values.numpy().tolist(), scaler)
            return True

        def check() -> Any:  # One tensor, one callback: the step's sync with Python.
            return tf.py_function(callback, [packed], Tout=tf.bool, name="tfviz_watch")

        gate = self._gate(packed, described)
        graph = tf.compat.v1.get_default_graph()
        spread = _spread_context()
        with tf.control_dependencies(self._chain[1] if self._chain[0] is graph else []):
            if spread is not None:  # every replica checks, and they agree before the update
                bits = tf.py_function(self._bits_of(described, ordinal, scaler), [packed], Tout=tf.float32)
                return self._pend(spread, bits, ordinal, grads)
            if gate is None:
                done = check()
                self._chain = (graph, [done])
            else:
                # A step no rule can fire on does not call Python at all: its figures are kept
                # in the graph (:class:`_Quiet`) and read when Python next needs them. Only a
                # suspect step stops for the check, before its update.
                quiet = _Quiet(described)
                self._quiet.append(quiet)
                n = sum(described[3])
                done = tf.cond(gate, check, lambda: tf.constant(True))
                kept = tf.cond(gate, lambda: tf.constant(True), lambda: quiet.update(packed[:n]))
                self._chain = (graph, [done, kept])
        with tf.control_dependencies([done]):
            flat = [_after(g) for g in tf.nest.flatten(grads)]
        return tf.nest.pack_sequence_as(grads, flat)

    def join(self, grads: Any, ordinal: int) -> Any:
        """The gradients of another replica of a step being traced, made to wait for the
        step's agreement: this replica's own check is that each gradient is finite (the
        rules that read the history run on the first replica, whose variables are the same)."""
        import tensorflow as tf

        spread = _spread_context()
        if spread is None:
            return grads
        bits = tf.constant(0.0)
        if "nan" in self.until:
            finite = [
                tf.reduce_all(tf.math.is_finite(g.values if isinstance(g, tf.IndexedSlices) else g))
                for g in tf.nest.flatten(grads)
                if g is not None and g.dtype.is_floating
            ]
            if finite:
                bits = tf.where(tf.reduce_all(tf.stack(finite)), 0.0, float(_BITS["nan"]))
        return self._pend(spread, bits, ordinal, grads)

    # -- agreeing across replicas -------------------------------------------------------------
    def _pend(self, ctx: Any, bits: Any, ordinal: int, grads: Any) -> Any:
        """Hold a replica's check until its update: the gradients pass through identities
        that can still be made to wait for the agreement, and the agreement itself rides the
        optimizer's all-reduce of the gradients where it can (:meth:`all_reduce`), or is made
        of its own just before the update (:meth:`before_update`)."""
        import tensorflow as tf

        out = [_after(g) for g in tf.nest.flatten(grads)]
        gates = [(g.values if isinstance(g, tf.IndexedSlices) else g).op for g in out if g is not None]
        self._rides.setdefault(_ride_key(ctx), []).append(_Ride(bits, ordinal, gates))
        return tf.nest.pack_sequence_as(grads, out)

    def all_reduce(self, ctx: Any, reduce_op: Any, value: Any, original: Callable[[Any], Any]) -> Any:
        """A replica's all-reduce while its watched step's check is pending: a sum of float32
        gradients (what Keras' optimizers make) carries the replicas' flags too, so agreeing
        costs no collective of its own, and the reduced gradients wait for the agreement."""
        import tensorflow as tf

        key = _ride_key(ctx)
        rides = self._rides.get(key)
        summed = reduce_op in (tf.distribute.ReduceOp.SUM, "sum", "SUM")
        if (
            not rides
            or not self.ride
            or not summed
            or not isinstance(value, list)
            or not all(
                tf.is_tensor(v) and not isinstance(v, tf.IndexedSlices) and v.dtype == tf.float32
                for v in value
            )
        ):
            return original(value)
        del self._rides[key]  # the graph is let go with its checks
        reduced = original([*value, self._flags(ctx, rides)])
        done = self._agreement(ctx, reduced[-1], rides)
        with tf.control_dependencies([done]):
            return [tf.identity(r) for r in reduced[:-1]]

    def before_update(self, riding: bool) -> None:
        """The step is about to update its variables: unless the update's own all-reduce will
        carry the agreement (``riding``), agree now, with an all-reduce of its own, and make
        the pending gradients wait for it."""
        ctx = _spread_context()
        if ctx is None:
            return
        key = _ride_key(ctx)
        rides = self._rides.get(key)
        if not rides or (riding and self.ride):
            return
        del self._rides[key]  # the graph is let go with its checks
        import tensorflow as tf

        flags = ctx.all_reduce(tf.distribute.ReduceOp.SUM, self._flags(ctx, rides))
        done = self._agreement(ctx, flags, rides)
        for ride in rides:
            for op in ride.gates:
                op._add_control_input(done.op)

    def _flags(self, ctx: Any, rides: list[_Ride]) -> Any:
        """This replica's bits, each ride's in this replica's slot of its own block."""
        import tensorflow as tf

        n = int(ctx.num_replicas_in_sync)
        me = tf.one_hot(ctx.replica_id_in_sync_group, n, dtype=tf.float32)
        return tf.concat([me * tf.cast(r.bits, tf.float32) for r in rides], 0)

    def _agreement(self, ctx: Any, flags: Any, rides: list[_Ride]) -> Any:
        """The summed flags read on every replica: Python is called only on a step some replica
        found bad, and stops it there (every replica reads the same sum)."""
        import tensorflow as tf

        n, strategy = int(ctx.num_replicas_in_sync), ctx.strategy
        ordinals = [r.ordinal for r in rides]

        def agree(values: Any) -> Any:
            v = [int(x) for x in values.numpy().tolist()]
            for k, ordinal in enumerate(ordinals):
                block = v[k * n : (k + 1) * n]
                if any(block):
                    self._agree(block, strategy, self.base + ordinal, ordinal)
            return True

        return tf.cond(
            tf.reduce_any(flags > 0),
            lambda: tf.py_function(agree, [flags], Tout=tf.bool, name="tfviz_agree"),
            lambda: tf.constant(True),
        )

    def _bits_of(self, described: _Described, ordinal: int, scaler: Any = None) -> Callable[[Any], Any]:
        """The host callback of the first replica's check under a strategy: the rules, as on
        one device, whose answer is the condition's bit (0: none fired) instead of a stop."""

        def bits(values: Any) -> Any:
            try:
                self._observe_packed(self.base + ordinal, ordinal, described, values.numpy().tolist(), scaler)
            except WatchStop:
                assert self.fired is not None
                return float(_BITS[self.fired.condition])
            return 0.0

        return bits

    def _agree(self, flags: list[int], strategy: Any, step: int, ordinal: int) -> None:
        """Stop the step when a replica's slot is set; the first callback of the step on this
        process notes where it fired and, on a cluster, waits until every worker has (after
        that, whichever worker stops first cannot cut another's callback short)."""
        bad = [r for r, f in enumerate(flags) if f]
        if not bad:
            return
        with self._agreeing:
            if self._agreed_step != step:
                self._agreed_step = step
                from tfviz.program import cluster

                names = cluster.replica_labels(strategy, len(flags))
                self.fired_on = [names[r] for r in bad]
                devices = len(strategy.extended.worker_devices)
                here = [i for i in (local_index(strategy, r) for r in bad) if 0 <= i < devices]
                self.fired_local = here[0] if here and self.fired is None else 0
                if self.fired is None:  # fired on another replica's batch: its first set bit says what
                    condition = next(c for c in CONDITIONS if flags[bad[0]] & _BITS[c])
                    what = "a gradient or the loss is not finite" if condition == "nan" else condition
                    self.fired = Fired(condition, step, ordinal, [], what)
                    self._flush()
                if cluster.joined() is not None:
                    cluster.barrier(f"fired/{step}", cluster.END_WAIT_S)
        raise WatchStop(
            f"tfviz: {self.fired.condition if self.fired else 'a condition'} at gradient step {step}"
        )

    def _note_ranks(self, sources: Any, described: _Described) -> None:
        """Each source's number of dimensions, by its key: the magnitude rule compares a kernel
        with kernels (:func:`tfviz.engine.magnitude.role`)."""
        import tensorflow as tf

        for key, source in zip(described[0], tf.nest.flatten(sources)):
            shape = getattr(source, "shape", None)
            self.ranks[key] = len(shape) if shape is not None and shape.rank is not None else 1

    def _gate(self, packed: Any, described: _Described) -> Any:
        """An in-graph bool: could a rule fire on this step? None: always check before the
        update (the record or the live view measure each update; a missing gradient with
        ``none`` on). Never false where a rule fires: ``nan`` and ``zero`` read the same
        figures; the magnitude rule's reference is a median of the sizes, so no size is more
        than DECADES from it unless the sizes themselves span that much."""
        import tensorflow as tf

        present = described[3]
        if self.detailed or ("none" in self.until and not all(present)) or tf.distribute.has_strategy():
            return None  # a strategy's replicas would each keep (and mirror) the figures
        n = sum(present)
        norms, finite, loss_ok = packed[:n], packed[n : 2 * n], packed[2 * n]
        suspect = tf.logical_or(tf.reduce_any(tf.equal(finite, 0.0)), tf.equal(loss_ok, 0.0))
        suspect = tf.logical_or(suspect, tf.reduce_any(tf.logical_not(tf.math.is_finite(norms))))
        if "zero" in self.until:
            suspect = tf.logical_or(suspect, tf.reduce_any(tf.equal(norms, 0.0)))
        if any(c in self.until for c in ("vanishing", "exploding")):
            sizes = [s for s, has in zip(described[2], present) if has]
            if len(sizes) >= 3:  # static shapes throughout: a masked gather costs more than it saves
                logs = tf.math.log(norms / tf.constant([math.sqrt(max(1, s)) for s in sizes], tf.float32))
                usable = norms > 0.0
                hi = tf.reduce_max(tf.where(usable, logs, -math.inf))
                lo = tf.reduce_min(tf.where(usable, logs, math.inf))
                spread = tf.logical_and(
                    tf.reduce_sum(tf.cast(usable, tf.int32)) >= 3,
                    hi - lo >= (magnitude.DECADES - 1e-3) * math.log(10.0),
                )
                suspect = tf.logical_or(suspect, spread)
        return suspect

    def check_eager(
        self, sources: Any, grads: Any, target: Any, step: int, scaler: Any = None
    ) -> Fired | None:
        packed = (
            _measure(sources, grads, target, self.detailed, self.tensorboard is not None).numpy().tolist()
        )
        described = _describe(sources, grads)
        self._note_ranks(sources, described)
        try:
            self._observe_packed(step, 1, described, packed, scaler)
        except WatchStop:
            return self.fired
        return None

    def _observe_packed(
        self, step: int, ordinal: int, described: _Described, v: list[float], scaler: Any = None
    ) -> None:
        """:meth:`observe` of :func:`_measure`'s one vector, laid out as it packs it."""
        keys, names, sizes, present = described
        n = sum(present)
        after = 2 * n + 1
        if self.tensorboard is not None:  # each present gradient's histogram, then the weights
            from tfviz.program.tensorboard import BINS

            width = BINS + 2
            shown = [name for name, has in zip(names, present) if has]
            self._histograms = {
                name: v[after + i * width : after + (i + 1) * width] for i, name in enumerate(shown)
            }
            after += n * width
        self.observe(
            step,
            ordinal,
            keys,
            names,
            sizes,
            present,
            v[:n],
            [x != 0 for x in v[n : 2 * n]],
            v[2 * n] != 0,
            v[after:],
            scaler,
        )

    def around_update(self, variables: list[Any], original: Callable[[], Any]) -> Any:
        """The optimizer's update, with each variable's change measured for the record."""
        import tensorflow as tf

        names = [variable_name(v, i) for i, v in enumerate(variables)]
        before = [tf.identity(_widened(v)) for v in variables]
        result = original()
        deltas = (
            l2_norms([_widened(v) - b for v, b in zip(variables, before)]) if variables else tf.zeros([0])
        )
        if tf.executing_eagerly():
            self.updated(names, deltas.numpy().tolist())
        else:
            tf.py_function(
                lambda d: self.updated(names, d.numpy().tolist()), [deltas], Tout=[], name="tfviz_update"
            )
        return result

    def updated(self, names: Sequence[str], deltas: Sequence[float]) -> None:
        for name, delta in zip(names, deltas):
            row = self._rows.get(name)
            if row is not None:
                row[3] = delta
        self._flush()

    # -- the rules (plain Python) ------------------------------------------------
    def observe(
        self,
        step: int,
        ordinal: int,
        keys: Sequence[int],
        names: Sequence[str],
        sizes: Sequence[int],
        present: Sequence[bool],
        norms: Sequence[float],
        finite: Sequence[bool],
        loss_ok: bool,
        weights: Sequence[float],
        scaler: Any = None,
    ) -> None:
        """Take one step's figures (``norms``/``finite`` for the present gradients only, in
        order); raise :class:`WatchStop` when a condition fires. ``scaler``: the
        LossScaleOptimizer that scaled the step's loss (mixed precision), whose scale now
        tells a gradient it made overflow from one that is not finite of itself."""
        self.drain()
        self.steps += 1
        self.last_step = max(self.last_step, step)
        it_norms = iter(zip(norms, finite))
        it_weights = iter(weights)
        rows: list[tuple[_Seen, float | None, bool, float | None]] = []
        for key, name, size, has in zip(keys, names, sizes, present):
            s = self.seen.get(key)
            if s is None:
                s = self.seen[key] = _Seen(name, size, self.ranks.get(key, 1))
            norm, ok = next(it_norms) if has else (None, True)
            weight = next(it_weights, None) if self.detailed else None
            rows.append((s, norm, ok, weight))
        if self.detailed:
            self._write(step, rows)
        fired = self._rules(rows, loss_ok, scaler)
        squares: dict[str, list[float]] = {}  # each layer's variables' squared norms
        for s, norm, ok, _ in rows:  # history after the rules: "none" compares with earlier steps
            if norm is None:
                continue
            s.had_gradient = True
            s.steps += 1
            layer = squares.setdefault(layer_of(s.name), [])
            if ok and math.isfinite(norm):
                s.zero_run = s.zero_run + 1 if norm == 0.0 else 0
                s.first = norm if s.first is None else s.first
                s.last = norm
                s.low, s.high = min(s.low, norm), max(s.high, norm)
                layer.append(norm * norm)
            else:
                layer.append(math.inf)
        for name, sq in squares.items():
            norm = math.sqrt(math.fsum(sq))
            if math.isfinite(norm):  # a layer with a NaN or an infinite gradient: no norm this step
                self._layer(name).add(norm, norm, norm, norm)
        if fired is not None and self.fired is None:
            condition, variables, detail = fired
            self.fired = Fired(condition, step, ordinal, variables, detail)
            self._flush()  # the step that fired is shown at once, before its diagnosis
            raise WatchStop(f"tfviz: {condition} at gradient step {step}")

    def drain(self) -> None:
        """Fold the quiet steps the graphs kept into the history, as :meth:`observe` would have."""
        for quiet in self._quiet:
            n, figures = quiet.take()
            if not n:
                continue
            self.steps += n
            n_rows = len(quiet.rows)
            for layer, first, last, low, high in zip(quiet.layers, *(row[n_rows:] for row in figures[:4])):
                self._layer(layer).add(first, last, low, high)
            for (key, name, size), first, last, low, high, zeros in zip(quiet.rows, *figures):
                s = self.seen.get(key)
                if s is None:
                    s = self.seen[key] = _Seen(name, size, self.ranks.get(key, 1))
                s.had_gradient = True
                s.steps += n
                s.zero_run = s.zero_run + n if zeros >= n else int(zeros)
                s.first = first if s.first is None else s.first
                s.last = last
                s.low, s.high = min(s.low, low), max(s.high, high)

    def _layer(self, name: str) -> _Span:
        span = self.layers.get(name)
        if span is None:
            span = self.layers[name] = _Span()
        return span

    @property
    def watched_steps(self) -> int:
        """Steps seen so far, the quiet ones kept in graphs included."""
        self.drain()
        return self.steps

    def _rules(
        self,
        rows: list[tuple[_Seen, float | None, bool, float | None]],
        loss_ok: bool,
        scaler: Any = None,
    ) -> tuple[str, list[str], str] | None:
        if "nan" in self.until:
            # its values, not its norm: a finite gradient's float32 norm overflows past 1.8e19
            bad = [s.name for s, norm, ok, _ in rows if norm is not None and not ok]
            scale = loss_scale(scaler) if bad and loss_ok and scaler is not None else None  # read only then
            if scale is not None and scale > 1.0:
                # Scaled by more than 1, a gradient may overflow float16 for the scale's sake: the
                # LossScaleOptimizer skips the step and halves its scale (dynamic loss scaling). At
                # a scale of 1 or less, a gradient that is not finite is so of itself.
                self.scaled_overflows.append(scale)
                bad = []
            if bad or not loss_ok:
                what = "the loss is not finite" if not loss_ok else ""
                if bad:
                    what += ("; " if what else "") + "the gradient of {names} is not finite"
                return "nan", bad, what
        if "none" in self.until:
            lost = [s.name for s, norm, _, _ in rows if norm is None and s.had_gradient]
            if lost:
                return "none", lost, "{names} got a gradient at earlier steps and gets None now"
        if "zero" in self.until:
            dead = [s.name for s, norm, ok, _ in rows if norm == 0.0 and s.zero_run + 1 >= self.zero_steps]
            if dead:
                return (
                    "zero",
                    dead,
                    (f"the gradient of {{names}} has been exactly zero for {self.zero_steps} steps in a row"),
                )
        wanted: list[str] = [c for c in ("vanishing", "exploding") if c in self.until]
        if wanted:
            return _magnitude_rule(rows, wanted)
        return None

    # -- the record and the summary ----------------------------------------------
    def _write(self, step: int, rows: list[tuple[_Seen, float | None, bool, float | None]]) -> None:
        """Keep the step's rows until its update is measured (:meth:`updated`), or the next step."""
        self._flush()
        for s, norm, ok, weight in rows:
            g = norm if norm is not None and ok else (math.nan if norm is not None else None)
            self._rows[s.name] = [step, s.name, g, None, weight]

    def _flush(self) -> None:
        if not self._rows:
            return
        rows = list(self._rows.values())
        self._rows.clear()
        if self.live is not None:
            point = layer_point(rows)
            if self.fired is not None:
                point["fired"] = self.fired.condition
            self.live(point)
        if self.tensorboard is not None:
            self._write_events(rows)
        if self.record is None or (self._writer is None and not self._open_record()):
            return
        for step, name, g, update, weight in rows:
            ratio = update / weight if update is not None and weight else None
            self._writer.writerow([step, name, _cell(g), _cell(update), _cell(weight), _cell(ratio)])
        assert self._out is not None
        self._out.flush()

    def _write_events(self, rows: list[list[Any]]) -> None:
        """The step's rows as TensorBoard's scalars and histograms; a folder that cannot be
        written ends the record with a line in the report, as a CSV record does."""
        from tfviz.program.tensorboard import EventRecord

        histograms, self._histograms = self._histograms, {}
        try:
            if self._events is None:
                self._events = EventRecord(self.tensorboard or "")
            self._events.write(rows, histograms)
        except Exception as exc:  # noqa: BLE001 - TensorFlow's file errors are of many kinds
            self.record_error = f"cannot write the TensorBoard record {self.tensorboard}: {exc}"
            self.tensorboard = None

    def _open_record(self) -> bool:
        """Open the record under its :func:`recording_path` (renamed into place by :meth:`close`,
        or by ``check`` when Ctrl-C ends the worker, so a reader never sees half a file);
        False when it cannot be written."""
        from tfviz.outputs import SIGNATURE, destination
        from tfviz.version import __version__

        assert self.record is not None
        try:
            destination(self.record)  # a regular file or a new name: never a FIFO or a device
            if self.record_tmp is None:
                self.record_tmp = record_temporary(self.record)
            # the temporary the client made: opened as it is, never through a link planted there
            fd = os.open(self.record_tmp, os.O_WRONLY | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0))
            self._out = open(fd, "w", newline="", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            self.record_error = f"cannot write the record {self.record}: {exc.strerror or exc}"
            self.record = None
            return False
        self._out.write(f"# {SIGNATURE} {__version__}\n")
        self._writer = csv.writer(self._out)
        self._writer.writerow(RECORD_COLUMNS)
        return True

    def close(self) -> None:
        """Write what is left of the record and put it in place (idempotent)."""
        self._flush()
        if self._events is not None:
            self._events.close()
            self._events = None
        if self._out is None:
            return
        self._out.close()
        self._out = None
        assert self.record is not None and self.record_tmp is not None
        try:
            finish_record(self.record, self.record_tmp)
        except OSError as exc:
            self.record_error = f"cannot write the record {self.record}: {exc.strerror or exc}"

    def summary(
        self, stopped_at: int | None, where: str, names: dict[str, str] | None = None
    ) -> WatchSummary:
        """What the run saw: ``stopped_at`` is the step diagnosed (None: the program ended).
        ``names`` gives the program's own names of the sources (the report's), by record name."""
        self.drain()
        self.close()
        names = names or {}
        if self.scaled_overflows:  # said once, in the notes
            n, hi, lo = len(self.scaled_overflows), max(self.scaled_overflows), min(self.scaled_overflows)
            self.scaled_overflows = []
            self.notes.append(
                f"the LossScaleOptimizer skipped {n} step{'s' if n != 1 else ''} whose scaled gradients"
                f" were not finite, at loss scales {lo:g} to {hi:g} (mixed precision). --until nan"
                " does not count such a step above a scale of 1, where dynamic loss scaling makes"
                " gradients overflow of its own; at 1 or less the scaled gradient is the gradient,"
                " and it does"
            )
        fired = [names.get(n, n) for n in self.fired.variables] if self.fired else []
        measured = [s for s in self.seen.values() if s.last is not None]
        return WatchSummary(
            until=list(self.until),
            steps=max(self.steps, stopped_at or 0),
            fired=self.fired.condition if self.fired else None,
            step=stopped_at,
            at=where,
            detail=self.fired.detail.replace("{names}", some_names(fired)) if self.fired else "",
            variables=fired,
            fired_on=list(self.fired_on),
            min_norm=min((s.low for s in measured), default=None),
            max_norm=max((s.high for s in measured), default=None),
            layers=[
                WatchedLayer(name, first=span.first, last=span.last, low=span.low, high=span.high)
                for name, span in self.layers.items()
                if span.last is not None
            ],
            record=self.record or "",
            record_error=self.record_error,
        )


def record_temporary(record: str) -> str:
    """A fresh temporary for the record, beside it (:func:`tempfile.mkstemp`: a new name, made
    with O_EXCL, so nothing planted there is followed or truncated). Raises OSError (a missing
    folder, one that cannot be written) or :class:`~tfviz.outputs.OutputError` (a record that
    is a FIFO or a device) before anything runs.

    >>> import tempfile
    >>> tmp = record_temporary(os.path.join(tempfile.mkdtemp(), "norms.csv"))
    >>> os.path.basename(tmp).startswith(".norms.csv.") and tmp.endswith(".recording.tfviz-tmp")
    True
    """
    import tempfile

    from tfviz.outputs import destination

    destination(record)
    folder, name = os.path.split(os.path.abspath(record))
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".recording.tfviz-tmp", dir=folder)
    os.close(fd)
    return tmp


def wants_parquet(record: str) -> bool:
    """A ``.parquet`` record is written as Parquet (with pyarrow), any other as CSV.

    >>> wants_parquet("runs/norms.PARQUET"), wants_parquet("norms.csv")
    (True, False)
    """
    return record.lower().endswith(".parquet")


def parquet_missing() -> str:
    """Why a Parquet record cannot be written here ("" when it can)."""
    import importlib.util

    if importlib.util.find_spec("pyarrow") is None:
        return "a .parquet record needs pyarrow (pip install pyarrow); a .csv record needs nothing"
    return ""


def finish_record(record: str, tmp: str) -> bool:
    """Put the record written so far (in ``tmp``) in place; False when there is none (nothing
    was written: the temporary is removed). The steps are written as CSV while the program
    runs (a line at a time, so Ctrl-C keeps them); a Parquet record is made from that CSV
    here, at the end."""
    if not os.path.isfile(tmp) or os.path.islink(tmp):
        return False
    if os.path.getsize(tmp) == 0:
        os.remove(tmp)
        return False
    try:
        if wants_parquet(record):
            _csv_to_parquet(tmp)
        match_mode(tmp, record)
        os.replace(tmp, record)
    except OSError:
        if os.path.lexists(tmp):
            os.remove(tmp)
        raise
    return True


#: the record's columns, as the CSV's header names them (and the Parquet file)
RECORD_COLUMNS = ("step", "variable", "grad_norm", "update_norm", "weight_norm", "update_to_weight")


def _csv_to_parquet(path: str) -> None:
    """Rewrite the CSV record at ``path`` as Parquet, in place: steps as int64, names as
    strings, norms as float64 (an empty cell is null, a non-finite norm stays NaN or inf).
    The file says it is tfviz's in its key-value metadata, as the CSV does in its first line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tfviz.outputs import SIGNATURE
    from tfviz.version import __version__

    with open(path, newline="", encoding="utf-8") as fh:
        lines = [line for line in fh if not line.startswith("#")]
    rows = list(csv.reader(lines))[1:]
    columns: dict[str, Any] = {
        "step": pa.array([int(r[0]) for r in rows], pa.int64()),
        "variable": pa.array([r[1] for r in rows], pa.string()),
    }
    for i, name in enumerate(RECORD_COLUMNS[2:], 2):
        columns[name] = pa.array([float(r[i]) if r[i] else None for r in rows], pa.float64())
    table = pa.table(columns).replace_schema_metadata({"tfviz": f"{SIGNATURE} {__version__}"})
    part = path + ".parquet"
    try:
        pq.write_table(table, part)
        os.replace(part, path)
    finally:
        if os.path.exists(part):
            os.remove(part)


def _magnitude_rule(
    rows: list[tuple[_Seen, float | None, bool, float | None]], wanted: list[str]
) -> tuple[str, list[str], str] | None:
    """The report's rule, cheap on the usual step: the reference first, and the cancelled
    variables (rounding noise beside a layer-mate) worked out only once something is out of
    range."""
    sizes = {
        s.name: norm / math.sqrt(s.size)
        for s, norm, ok, _ in rows
        if norm is not None and ok and math.isfinite(norm) and norm > 0
    }
    if len(sizes) < 3:
        return None
    order = list(sizes)
    hops = {name: len(order) - i for i, name in enumerate(order)}  # the last sources nearest the loss
    roles = {s.name: magnitude.role([0] * s.rank) for s, *_ in rows if s.name in sizes}
    by_role = magnitude.references(sizes, roles, hops)
    refs = {n: by_role[roles[n]] for n in sizes}
    span = 10**magnitude.DECADES
    if all(refs[n] / span <= p <= refs[n] * span for n, p in sizes.items()):
        return None
    reports = [VariableReport(n, n, "float32", [1], "connected", grad_norm=p) for n, p in sizes.items()]
    quiet = magnitude.cancelled(sizes, reports, refs)
    for condition in wanted:
        hit = [
            n
            for n, p in sizes.items()
            if n not in quiet and magnitude.Magnitude(p, refs[n]).verdict == condition
        ]
        if hit:
            worst = max(hit, key=lambda n: abs(math.log10(sizes[n] / refs[n])))
            decades = math.log10(sizes[worst] / refs[worst])
            return (
                condition,
                hit,
                (
                    "the gradient of {names}"
                    f" sits {abs(decades):.1f} decades"
                    f" {'below' if decades < 0 else 'above'} the {roles[worst]} nearest the loss"
                ),
            )
    return None


#: each condition's bit in a replica's slot of the agreement (:meth:`Watch._agreement`)
_BITS = {c: 1 << i for i, c in enumerate(CONDITIONS)}


@dataclass
class _Ride:
    """One replica's check of one gradient call, waiting for the step's update."""

    bits: Any
    ordinal: int
    #: the identities its gradients pass through (made to wait for an agreement of its own)
    gates: list[Any]


def _ride_key(ctx: Any) -> tuple[Any, int]:
    """The graph being traced (itself: an id could be a dead graph's) and the replica."""
    import tensorflow as tf

    index = tf.get_static_value(ctx.replica_id_in_sync_group)
    return tf.compat.v1.get_default_graph(), int(index) if index is not None else -1


def _spread_context() -> Any:
    """The replica context of a strategy that runs the step on several replicas; None else."""
    import tensorflow as tf

    if not tf.distribute.has_strategy() or tf.distribute.in_cross_replica_context():
        return None
    ctx = tf.distribute.get_replica_context()
    if ctx is None or int(ctx.num_replicas_in_sync) < 2:
        return None
    return ctx


def _describe(sources: Any, grads: Any) -> _Described:
    import tensorflow as tf

    srcs = tf.nest.flatten(sources)
    flat = tf.nest.flatten(grads)
    keys = [id(getattr(s, "handle", s)) if _is_variable(s) else i for i, s in enumerate(srcs)]
    names = [variable_name(s, i) for i, s in enumerate(srcs)]
    sizes = [_size(s) for s in srcs]
    present = [g is not None for g in flat]
    return keys, names, sizes, present


def _measure(sources: Any, grads: Any, target: Any, weights: bool, histograms: bool = False) -> Any:
    """One float32 vector: each present gradient's norm, then whether each is finite (1/0),
    whether the loss is, (for TensorBoard) each present gradient's histogram, and (for the
    record) each variable's norm."""
    import tensorflow as tf

    present, finite, hists = [], [], []
    for g in tf.nest.flatten(grads):
        if g is None:
            continue
        values = g.values if isinstance(g, tf.IndexedSlices) else g
        values = tf.math.abs(values) if values.dtype.is_complex else values
        present.append(values)
        finite.append(tf.reduce_all(tf.math.is_finite(values)))
        if histograms:
            from tfviz.program.tensorboard import histogram_of

            hists.append(histogram_of(tf.cast(values, tf.float32)))
    checks = [
        tf.reduce_all(tf.math.is_finite(tf.cast(t, tf.float32)))
        for t in tf.nest.flatten(target)
        if _is_float_tensor(t)
    ]
    loss_ok = tf.reduce_all(tf.stack(checks)) if checks else tf.constant(True)
    wn = [tf.convert_to_tensor(s) for s in tf.nest.flatten(sources) if weights and _is_variable(s)]
    parts = [l2_norms(present)] if present else []
    if finite:
        parts.append(tf.cast(tf.stack(finite), tf.float32))
    parts.append(tf.reshape(tf.cast(loss_ok, tf.float32), [1]))
    parts.extend(hists)
    if wn:
        parts.append(l2_norms(wn))
    return tf.concat(parts, 0)


def _widened(v: Any) -> Any:
    """A variable's value to take its change of: in float64 where it is one, else in float32."""
    import tensorflow as tf

    value = tf.convert_to_tensor(v)
    return value if value.dtype == tf.float64 else tf.cast(value, tf.float32)


def l2_norms(tensors: list[Any]) -> Any:
    """Each tensor's L2 norm, as one float32 vector, summed in float32 as a step can afford.
    Where a sum is not finite, all are summed again in float64, in a branch a step takes only
    then: a diverging step's gradients (1e36 an element, finite by TensorFlow's
    ``is_finite``) square past float32's range, and their norm is no infinity. A NaN or an
    infinity among the values stays one; a norm past float32's own range (3.4e38) stays inf."""
    import tensorflow as tf

    flat = [tf.reshape(t, [-1]) for t in tensors]
    fast = tf.stack([tf.norm(tf.cast(f, tf.float32)) for f in flat])

    def exact() -> Any:
        return tf.cast(tf.stack([tf.norm(tf.cast(f, tf.float64)) for f in flat]), tf.float32)

    return tf.cond(tf.reduce_all(tf.math.is_finite(fast)), lambda: fast, exact)


def _after(g: Any) -> Any:
    import tensorflow as tf

    if g is None:
        return None
    if isinstance(g, tf.IndexedSlices):
        return tf.IndexedSlices(tf.identity(g.values), g.indices, g.dense_shape)
    return tf.identity(g)


def _is_variable(x: Any) -> bool:
    return hasattr(x, "assign") and hasattr(x, "dtype")


def _is_float_tensor(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype is not None and getattr(dtype, "is_floating", False)


def _size(x: Any) -> int:
    shape = getattr(x, "shape", None)
    if shape is None:
        return 1
    dims = [d if isinstance(d, int) else 1 for d in list(shape)]
    return max(1, math.prod(dims))


def variable_name(x: Any, index: int) -> str:
    """A source's name as the record writes it: a Keras variable's path, else TensorFlow's name.

    >>> class V: path = "dense/kernel"; name = "kernel"
    >>> variable_name(V(), 0)
    'dense/kernel'
    """
    path = getattr(x, "path", None)
    if isinstance(path, str) and path:
        return path
    name = getattr(x, "name", None)
    if isinstance(name, str) and name and _is_variable(x):
        return name.split(":", 1)[0]
    return f"source {index}"


def some_names(names: list[str]) -> str:
    """The first three names, and how many more.

    >>> some_names(["a", "b", "c", "d"])
    'a, b, c and 1 more'
    """
    shown = ", ".join(names[:3])
    return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _cell(x: float | None) -> str:
    return "" if x is None else repr(float(x))
