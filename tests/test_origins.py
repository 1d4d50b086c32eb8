"""Where eager tensors came from (tfviz.engine.origins): the variables a tensor was computed
from, the user's line that made it, and a record that stays linear in the ops recorded."""

from __future__ import annotations

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
