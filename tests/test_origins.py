"""Where eager tensors came from (tfviz.engine.origins): the variables a tensor was computed
from, the user's line that made it, and a record that stays linear in the ops recorded."""

from __future__ import annotations

import contextlib

import pytest

tf = pytest.importorskip("tensorflow")

from tfviz.engine.origins import OriginRecorder  # noqa: E402


def test_a_tensor_is_traced_back_to_every_variable_it_was_computed_from():
    a = tf.Variable([1.0, 2.0])
    b = tf.Variable([3.0, 4.0])
    with OriginRecorder() as rec:
        doubled = a * 2.0
        summed = doubled + b
        flat = tf.reshape(summed, [-1])
        after = _line()
        plain = tf.constant([1.0]) * 3.0
    assert rec.sources_of(doubled) == {id(a.handle)}
    assert rec.sources_of(flat) == {id(a.handle), id(b.handle)}
    assert rec.sources_of(plain) == frozenset()
    where = rec.origin(flat)
    assert where is not None and where.file == __file__
    assert (where.line, where.code) == (after - 1, "flat = tf.reshape(summed, [-1])")


def test_an_op_handed_a_variable_itself_is_traced_back_to_it():
    """A Keras variable's operators hand TensorFlow the variable itself, which its fast path
    reads in C++, with no op callback: noted, the op is traced back to the variable, as
    ``tf.reshape`` of it (read in Python) is; unnoted, it is not."""
    keras = pytest.importorskip("keras")
    w = keras.Variable(tf.random.normal([3]))
    handle = id(w.value.handle)
    with OriginRecorder() as rec:
        unnoted = w * 2.0
        with rec.noting_handed_variables():
            scaled = w * 2.0
            plain = tf.ones([3]) * 2.0
        reshaped = tf.reshape(w, [3])
    assert rec.sources_of(scaled) == rec.sources_of(reshaped) == {handle}
    assert rec.sources_of(unnoted) == rec.sources_of(plain) == frozenset()


def test_a_variable_made_while_recording_is_numbered_and_placed():
    with OriginRecorder() as rec:
        mark = rec.made
        v = tf.Variable(1.0)
        after = _line()
    assert rec.made_since(mark, v.handle)
    assert not rec.made_since(rec.made, v.handle)
    where = rec.origin(v.handle)
    assert where is not None and (where.line, where.code) == (after - 1, "v = tf.Variable(1.0)")


def test_each_record_holds_its_own_ops_inputs_not_every_variable_upstream():
    # A deep forward pass: a union per op held every upstream variable in each activation's
    # record, so recording cost the square of the depth.
    vs = [tf.Variable(float(i)) for i in range(300)]
    with OriginRecorder() as rec:
        xs = [tf.constant(0.0)]
        for v in vs:
            xs.append(xs[-1] + v)  # each kept, so no id is reused
    assert rec.sources_of(xs[-1]) == {id(v.handle) for v in vs}
    assert rec.sources_of(xs[100]) == {id(v.handle) for v in vs[:100]}
    held = [made for _, made in rec._origins.values()]
    assert len(held) >= 300
    assert max(len(made.handles) + len(made.parents) for made in held) <= 2


def _line() -> int:
    import sys

    return sys._getframe(1).f_lineno


def test_the_recorder_and_the_copy_read_each_ops_line_off_the_stack_once(monkeypatch):
    from tfviz.engine.eagerstream import Stream
    from tfviz.script import sourcemap

    reads = []
    real = sourcemap.running_user_source
    monkeypatch.setattr(sourcemap, "running_user_source", lambda skip=0: reads.append(1) or real(skip + 1))
    a = tf.Variable([1.0, 2.0])
    with OriginRecorder() as rec, Stream() as stream:
        doubled = a * 2.0
        after = _line()
        tf.reduce_sum(doubled)
    ops = [op for op in stream.graph.get_operations() if op.type != "Placeholder"]
    assert [op.type for op in ops] == ["ReadVariableOp", "Mul", "Sum"]
    assert len(reads) == len(ops)  # the recorder saw all three too (each reads a)
    made = rec.origin(doubled)
    assert made is not None and made.line == after - 1 and stream.sources["mul"] == made


def _lineages(rec, tensors):
    return [(rec.sources_of(t), rec.origin(t)) for t in tensors]


def _call(w, made=None):
    """Ops a step's call runs: a frozen copy of a weight among them (and, with ``made``, a
    variable the call makes, as a layer built lazily does)."""
    copy = tf.reshape(w, [-1])
    out = copy * 2.0 + 1.0
    if made is not None:
        made.append(tf.Variable(0.0))
    return [copy, out]


@contextlib.contextmanager
def _copied(rec, needed):
    """The call copied as the analysis copies it, handing the recorder its lineage."""
    from tfviz.engine.eagerstream import Stream

    stream = Stream()
    stream.lineage = []
    with rec.held(lambda: needed(stream), stream.lineage), stream:
        yield stream


def _refusing_call(w, made=None):
    """A call whose copy refuses halfway (Python reads a value): the ops after it are not
    copied, and the recorder is handed them with their tensors."""
    copy = tf.reshape(w, [-1])
    first = float(copy[0])
    out = copy * first + 1.0
    return [copy, out]


CASES = ["made a variable", "needed", "raised", "settled", "recorded after", "refused"]


@pytest.mark.parametrize("case", CASES)
def test_ops_held_through_a_copied_call_get_the_lineage_recording_them_live_gives(case):
    """The slow twin records each op of the call as it runs; held, the same ops get the same
    lineage and line wherever it can still be asked for: a call that made variables, a copy
    that does not stand (``needed``, ``refused``: the ops after the refusal handed over with
    their tensors), a call that raised, ops recorded once the copy is known not to stand
    (``settle``), an op recorded after the call. The copy keeps none of the call's tensors
    alive: ``out`` is linked to ``w`` through a product no one holds any more."""
    call = _refusing_call if case == "refused" else _call
    w = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with OriginRecorder() as live:
        twin = call(w)
        later_twin = twin[1] * 3.0
    assert live.sources_of(twin[0]) == {id(w.handle)}
    made: list = []
    with OriginRecorder() as rec:
        try:
            with _copied(rec, lambda stream: case == "needed" or stream.refused is not None):
                got = call(w, made if case == "made a variable" else None)
                if case == "raised":
                    raise RuntimeError("the step's own error")
        except RuntimeError:
            pass
        if case == "settled":
            rec.settle()
        later = got[1] * 3.0 if case == "recorded after" else None
    want = [(s, (o.line, o.code) if o else None) for s, o in _lineages(live, twin)]
    have = [(s, (o.line, o.code) if o else None) for s, o in _lineages(rec, got)]
    assert have == want and [s for s, _ in want] == [{id(w.handle)}, {id(w.handle)}]
    assert want[0][1] is not None and want[0][1][1] == "copy = tf.reshape(w, [-1])"
    if later is not None:
        assert rec.sources_of(later) == live.sources_of(later_twin) == {id(w.handle)}


def test_ops_held_through_a_copied_call_that_stands_are_let_go_unrecorded():
    """Where the copy stands for the step, nothing later asks about what its call made: the
    held ops are dropped with the call's tensors, never recorded."""
    import weakref

    w = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with OriginRecorder() as rec:
        with _copied(rec, lambda stream: False):
            got = _call(w)
        gone = weakref.ref(got[1])
        rec.let_go()
    assert rec.sources_of(got[0]) == frozenset() and rec._origins.get(id(got[1])) is None
    del got
    assert gone() is None  # the recorder held the call's tensors no longer
