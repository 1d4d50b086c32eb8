"""The eager call copied into a graph op by op (tfviz.engine.eagerstream): the copy holds
what a ``tf.function`` trace of the same code holds, named as the trace names it, and it
refuses what a copy cannot stand for, so the caller traces instead. The oracle is
TensorFlow: a real trace of the same function, and the tape's own gradients."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from tfviz.engine.eagerstream import Stream, stream_trace  # noqa: E402
from tfviz.engine.flow import union_region  # noqa: E402

W = tf.Variable([[0.5, -1.0], [2.0, 0.25]], name="W")
B = tf.Variable([0.1, -0.2], name="b")
X = tf.constant([[1.0, 2.0]])


def _dense():
    h = tf.add(tf.matmul(X, W), B, name="h")
    return tf.reduce_sum(tf.tanh(h, name="y") ** 2, name="loss")


def _copied(fn):
    with Stream() as stream, tf.GradientTape(persistent=True) as tape:
        loss = fn()
    return stream, loss, tape


def _traced_ops(fn) -> list[tuple[str, str]]:
    graph = tf.function(fn, autograph=False).get_concrete_function().graph
    return sorted(
        (op.type, op.name)
        for op in graph.get_operations()
        if op.type not in ("Placeholder", "Const", "Identity", "NoOp")
    )


def test_the_copy_holds_the_ops_a_trace_holds_named_as_the_trace_names_them():
    stream, _, _ = _copied(_dense)
    assert stream.refused is None
    copied = sorted((op.type, op.name) for op in stream.graph.get_operations() if op.type != "Placeholder")
    assert copied == _traced_ops(_dense)
    assert {"h", "y", "loss"} <= {op.name for op in stream.graph.get_operations()}


def test_a_variable_handed_to_an_op_itself_is_read_by_an_op_of_the_copy():
    # eagerly TensorFlow's fast path reads such a variable in C++, where no callback sees it
    stream, _, _ = _copied(lambda: tf.reduce_sum(tf.sqrt(W * W)))
    reads = [op for op in stream.graph.get_operations() if op.type == "ReadVariableOp"]
    assert len(reads) == 2
    handles = {id(ext) for ext, internal in stream.graph.captures if internal.dtype == tf.resource}
    assert handles == {id(W.handle)}


def test_shapes_are_the_eager_calls():
    stream, loss, _ = _copied(_dense)
    h = stream.graph.get_operation_by_name("h").outputs[0]
    assert h.shape.as_list() == [1, 2] and stream.graph_tensor(loss).shape.as_list() == []


def test_each_ops_user_line_read_as_it_ran_is_the_one_a_traces_traceback_holds():
    from tfviz.script.sourcemap import user_source

    stream, _, _ = _copied(_dense)
    ops = stream.graph.get_operations()
    assert {op.name for op in ops} == set(stream.sources)
    graph = tf.function(_dense, autograph=False).get_concrete_function().graph
    traced = {op.name: user_source(op.traceback) for op in graph.get_operations()}
    compared = [op.name for op in ops if op.type != "Placeholder"]
    assert len(compared) >= 6
    for name in compared:
        assert stream.sources[name] == traced[name], name
    first = _dense.__code__.co_firstlineno
    assert {src.line for src in stream.sources.values()} == {first + 1, first + 2}


def _linker(stream):
    def link(og, fg):
        g = og.g
        for ext, internal in fg.captures:
            if ext is W.handle or ext is B.handle:
                node = "var:" + ("W" if ext is W.handle else "b")
                g.add_node(node, op=None, type="Variable", outputs=[])
                g.add_edge(node, internal.op.name, ports=[(0, 0)], dtype="resource", shape=[])
        return union_region(g, [n for n in ("var:W", "var:b") if n in g], og.target)

    return link


def test_its_verdict_and_norms_are_the_tapes():
    stream, loss, tape = _copied(_dense)
    traced = stream_trace(stream, _dense, loss, tape, [W, B], _linker(stream))
    assert traced is not None
    with tf.GradientTape() as oracle:
        value = _dense()
    gw, gb = oracle.gradient(value, [W, B])
    assert traced.truth.grads_present == {id(W): True, id(B): True}
    assert traced.truth.norms[id(W)] == pytest.approx(float(tf.norm(gw)), rel=1e-6)
    assert traced.truth.norms[id(B)] == pytest.approx(float(tf.norm(gb)), rel=1e-6)
    # every tensor on the path has the gradient the tape gives it
    with tf.GradientTape() as oracle:
        h = tf.add(tf.matmul(X, W), B)
        value = tf.reduce_sum(tf.tanh(h) ** 2)
    assert traced.tensor_norms[("h", 0)] == pytest.approx(float(tf.norm(oracle.gradient(value, h))), rel=1e-6)


def test_a_cut_is_none_as_the_tape_has_it():
    def cut():
        return tf.reduce_sum(tf.stop_gradient(W) * B)

    stream, loss, tape = _copied(cut)
    traced = stream_trace(stream, cut, loss, tape, [W, B], _linker(stream))
    assert traced is not None and traced.truth.grads_present == {id(W): False, id(B): True}
    assert "StopGradient" in {d.get("type") for _, d in traced.og.g.nodes(data=True)}


@pytest.mark.parametrize(
    "name, fn",
    [
        (
            "tf.cond",
            lambda: tf.cond(tf.reduce_sum(W) > 0, lambda: tf.reduce_sum(W), lambda: tf.reduce_sum(B)),
        ),
        ("tf.while_loop", lambda: tf.while_loop(lambda i, a: i < 2, lambda i, a: (i + 1, a * W), [0, W])[1]),
        ("a value read in Python", lambda: tf.reduce_sum(W) * float(tf.reduce_sum(B))),
        ("a tf.function", lambda: tf.function(lambda: tf.reduce_sum(W * W))()),
        ("a py_function", lambda: tf.py_function(lambda a: a * 2.0, [tf.reduce_sum(W)], tf.float32)),
    ],
)
def test_what_a_copy_cannot_stand_for_refuses_it(name, fn):
    stream, loss, tape = _copied(fn)
    assert stream.refused, name
    assert stream_trace(stream, fn, loss, tape, [W, B], _linker(stream)) is None


def test_leaving_the_stream_puts_tensorflow_back_as_it_was():
    from tensorflow.python import pywrap_tfe
    from tensorflow.python.framework import ops
    from tensorflow.python.ops import cond

    before = (pywrap_tfe.TFE_Py_FastPathExecute, ops.name_scope, cond._eager_cond_implementation)
    bool_before = ops._EagerTensorBase.__dict__["__bool__"]
    _copied(_dense)
    assert (pywrap_tfe.TFE_Py_FastPathExecute, ops.name_scope, cond._eager_cond_implementation) == before
    assert ops._EagerTensorBase.__dict__["__bool__"] is bool_before


@pytest.mark.parametrize(
    "op, fn",
    [
        # eagerly an empty list attribute (squeeze_dims) comes as None
        ("Squeeze", lambda: tf.reduce_sum(tf.squeeze(tf.reshape(W, [1, 4])))),
        # TensorFlow folds the dilation eagerly with .numpy(), as a trace folds a constant
        (
            "DepthwiseConv2dNative",
            lambda: tf.reduce_sum(
                tf.nn.depthwise_conv2d(
                    tf.ones([1, 4, 4, 1]), tf.reshape(W, [2, 2, 1, 1]), [1, 1, 1, 1], "SAME"
                )
            ),
        ),
    ],
)
def test_what_tensorflow_does_eagerly_on_its_own_is_copied(op, fn):
    stream, _, _ = _copied(fn)
    assert stream.refused is None, op
    copied = {o.type for o in stream.graph.get_operations() if o.type != "Placeholder"}
    # and every op the trace holds (eagerly the copy also holds what a trace folds: Fill, Shape)
    assert op in copied and {t for t, _ in _traced_ops(fn)} <= copied


def _split_one_unused():
    a, b = tf.split(tf.matmul(X, W) + B, 2, axis=1)
    return tf.reduce_sum(tf.tanh(a))


@tf.custom_gradient
def _clipped(x):
    return tf.identity(x), lambda dy: tf.clip_by_value(dy, -0.1, 0.1)


EMBED = tf.Variable(tf.random.stateless_normal([10, 2], seed=[1, 2]), name="embed")


@pytest.mark.parametrize(
    "name, fn",
    [
        ("dense", _dense),
        (
            "a residual add and a shared input",
            lambda: tf.reduce_sum(tf.tanh(X @ W) + X @ W + tf.square(X @ W)),
        ),
        ("an output no consumer differentiates", _split_one_unused),
        ("a custom gradient", lambda: tf.reduce_sum(_clipped(X @ W) * B)),
        ("a gather (IndexedSlices)", lambda: tf.reduce_sum(tf.gather(EMBED, [1, 3, 3]) @ W)),
        ("a stop_gradient", lambda: tf.reduce_sum(tf.stop_gradient(X @ W) * B + X @ W)),
        ("a NaN", lambda: tf.reduce_sum(tf.sqrt(X @ W - 10.0)) + tf.reduce_sum(B)),
        ("an integer cast", lambda: tf.reduce_sum(tf.cast(tf.cast(X @ W, tf.int32), tf.float32) * B)),
    ],
)
def test_path_gradients_watched_in_the_pass_are_the_tapes(monkeypatch, name, fn):
    """Each path tensor's norm, measured as the variables' one backward pass hands it to an
    op's gradient function, is that of the tape asked for the tensor itself (None where the
    tape has None)."""
    import tfviz.engine.eagerstream as eagerstream

    stream, loss, tape = _copied_once(fn)
    watched = stream_trace(stream, fn, loss, tape, [W, B, EMBED], _linker(stream))
    ask_all = eagerstream._watched_or_asked

    def asked_only(stream, tensors, keys):
        watched, asked = ask_all(stream, tensors, keys)
        return {}, list(zip(tensors, keys))

    monkeypatch.setattr(eagerstream, "_watched_or_asked", asked_only)
    monkeypatch.setattr(eagerstream, "HOLD_EVERY_OUTPUT", True)  # every path tensor can be asked for
    stream, loss, tape = _copied_once(fn)
    oracle = stream_trace(stream, fn, loss, tape, [W, B, EMBED], _linker(stream))
    assert watched is not None and oracle is not None, name
    assert len(oracle.tensor_norms) >= 3, name
    assert watched.tensor_norms.keys() == oracle.tensor_norms.keys(), name
    for key, value in oracle.tensor_norms.items():
        assert watched.tensor_norms[key] == pytest.approx(value, rel=1e-6, nan_ok=True), (name, key)
    assert watched.truth.norms == pytest.approx(oracle.truth.norms, nan_ok=True)


def _copied_once(fn):
    """As the analysis calls it: a tape that gives one backward pass."""
    with Stream() as stream, tf.GradientTape() as tape:
        loss = fn()
    return stream, loss, tape


def _watch_every_first_output(stream):
    return {id(attrs): (attrs, [(0, (name, 0))]) for name, attrs in stream.attrs_of.items()}


def test_leaving_the_watch_puts_tensorflow_back_as_it_was():
    from tfviz.engine.eagerstream import OutputGradients

    stream, loss, tape = _copied_once(_split_one_unused)
    with OutputGradients(_watch_every_first_output(stream)) as seen:
        tape.gradient(loss, [W, B])
    assert len(seen.norms()) >= 3 and seen._fillers  # split's unused half was filled with zeros
    stream, loss, tape = _copied_once(_split_one_unused)
    left = OutputGradients(_watch_every_first_output(stream))
    with left:
        pass
    tape.gradient(loss, [W, B])
    assert left.norms() == {} and not left._fillers


def test_an_integer_the_script_holds_is_named_and_one_it_does_not_is_a_constant(tmp_path):
    """In the copy every eager input is a placeholder: a Python value TensorFlow made a
    tensor of (``reduce_mean``'s axes) is shown as the constant a trace makes of it, and an
    integer the script holds (its labels) by the script's name for it."""
    from tfviz.analysis.diagnose import analyze

    script = tmp_path / "labels.py"
    script.write_text(
        "import tensorflow as tf\n"
        "w = tf.Variable(tf.ones([3, 4]))\n"
        "x = tf.ones([2, 3])\n"
        "labels = tf.constant([1, 3])\n"
        "def loss():\n"
        "    logits = tf.matmul(x, w)\n"
        "    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)\n"
        "    return tf.reduce_mean(ce, axis=[0])\n"
    )
    report = analyze(str(script))
    assert report.ok
    ints = [op for op in report.graph.ops if op.outputs and op.outputs[0].dtype == "int32"]
    assert {op.label for op in ints if op.type == "Placeholder"} == {"labels"}
    consts = [op for op in ints if op.type == "Const"]
    assert consts and all(not op.label for op in consts)


def _alive_after_the_forward_pass(fn, copy: bool) -> list[tuple[str, tuple[int, ...]]]:
    """The op type and shape of each tensor the call made that is still alive once its
    forward pass is over, the tape still open for its backward pass (a variable's reads
    left out: the copy reads each itself, in an op of its own)."""
    import weakref

    from tensorflow.python.framework import op_callbacks

    made: list[tuple[str, weakref.ref]] = []

    def note(op_type, inputs, attrs, outputs, op_name=None, graph=None):
        kind = op_type.decode() if isinstance(op_type, bytes) else op_type
        made.extend((kind, weakref.ref(t)) for t in outputs or ())

    op_callbacks.add_op_callback(note)
    try:
        stream = Stream() if copy else None
        if stream is not None:
            stream.__enter__()
        try:
            with tf.GradientTape() as tape:
                loss = fn()
        finally:
            if stream is not None:
                stream.__exit__(None, None, None)
    finally:
        op_callbacks.remove_op_callback(note)
    alive = sorted(
        (kind, tuple(t.shape.as_list()))
        for kind, ref in made
        if (t := ref()) is not None and kind != "ReadVariableOp"
    )
    tape.gradient(loss, tape.watched_variables())  # the pass they were kept for
    return alive


def test_the_copy_keeps_alive_no_tensor_of_the_call_that_the_script_lets_go():
    """Once a Keras model's forward pass is over, the tensors of the call still alive under
    the copy are those alive under the script's own tape: the copy holds no activation more
    (TensorFlow's tape decides what the backward pass needs). Held, every activation stayed
    alive until the backward pass began, and was then taken afresh from the system there."""
    keras = pytest.importorskip("keras")
    model = keras.Sequential(
        [
            keras.Input((8, 8, 3)),
            keras.layers.Conv2D(4, 3, padding="same"),
            keras.layers.BatchNormalization(),
            keras.layers.ReLU(),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(2),
        ]
    )
    x = tf.random.stateless_normal([2, 8, 8, 3], seed=[3, 4])

    def loss():
        return tf.reduce_mean(model(x, training=True) ** 2)

    own = _alive_after_the_forward_pass(loss, copy=False)
    copied = _alive_after_the_forward_pass(loss, copy=True)
    assert len(own) >= 10  # the activations the tape keeps for its backward pass
    assert copied == own


_SHARED_ATTRS = ("T", tf.float32.as_datatype_enum)


def _sharing_attrs(op_type: str, x):
    """Op ``op_type`` of ``x`` as TensorFlow's own slow path runs it, handed the one attribute
    tuple every call shares (a gradient function then cannot tell its ops apart by it)."""
    from tensorflow.python.eager import context, execute

    (y,) = execute.execute(op_type.encode(), 1, inputs=[x], attrs=_SHARED_ATTRS, ctx=context.context())
    if execute.must_record_gradient():
        execute.record_gradient(op_type, [x], _SHARED_ATTRS, [y])
    return y


def _exp_sharing_attrs(x):
    return _sharing_attrs("Exp", x)


def test_ops_sharing_an_attribute_tuple_are_asked_for_as_sources_and_held_for_it():
    """Two ops the tape was handed one attribute tuple for are asked for as sources, so the
    copy holds their outputs though the script keeps neither; their norms are the tape's."""

    def fn():
        return tf.reduce_sum(_exp_sharing_attrs(_exp_sharing_attrs(X @ W) * 0.5) + B)

    stream, loss, tape = _copied_once(fn)
    assert stream.refused is None
    shared = [name for name, attrs in stream.attrs_of.items() if attrs is _SHARED_ATTRS]
    assert len(shared) == 2 and all(stream._kept.get(name) for name in shared)
    traced = stream_trace(stream, fn, loss, tape, [W, B], _linker(stream))
    assert traced is not None
    with tf.GradientTape(persistent=True) as oracle_tape:
        first = tf.exp(X @ W)
        second = tf.exp(first * 0.5)
        oracle_loss = tf.reduce_sum(second + B)
    for name, want in zip(shared, (first, second)):
        grad = oracle_tape.gradient(oracle_loss, want)
        assert traced.tensor_norms[(name, 0)] == pytest.approx(float(tf.norm(grad)), rel=1e-6)


def test_a_copy_refuses_where_the_first_of_two_ops_sharing_an_attribute_tuple_is_gone():
    """Where the first op's output is gone by the time a second op shares its tuple, the copy
    cannot ask for it, and refuses: the caller traces instead."""

    def fn():
        _sharing_attrs("Neg", X @ W)  # let go at once: Neg's gradient needs none of its tensors
        return tf.reduce_sum(_sharing_attrs("Neg", X @ W + 1.0))

    stream, _, _ = _copied_once(fn)
    assert stream.refused is not None and "share one attribute tuple" in stream.refused


def test_a_copy_asked_for_a_tensor_it_did_not_hold_stands_for_no_trace(monkeypatch):
    """Where a tensor to ask the tape for as a source is gone (the copy holds only those it
    knows will be asked), the copy stands for no trace and the tape is left unasked: the
    analysis traces instead, never fails on it."""
    import tfviz.engine.eagerstream as eagerstream

    monkeypatch.setattr(
        eagerstream, "_watched_or_asked", lambda stream, tensors, keys: ({}, list(zip(tensors, keys)))
    )

    def fn():
        return tf.reduce_sum(tf.tanh(X @ W) * 2.0 + B)  # tanh's input: no one holds it

    stream, loss, tape = _copied_once(fn)
    assert stream_trace(stream, fn, loss, tape, [W, B], _linker(stream)) is None
    assert tape.gradient(loss, [W, B])[0] is not None  # unasked: the script's pass is still there


def test_a_value_read_is_the_users_only_where_the_users_code_read_it():
    """A read is named as the step's own (``read out into Python at train.py:N``) only where its
    caller is the user's code, past NumPy's own functions and a variable's read methods
    (``gain.numpy()`` reads a tensor inside TensorFlow); a read that a library's own code
    makes (Keras converting a value for itself) is not the user's."""
    import os
    import sys
    import sysconfig

    from tfviz.script.sourcemap import reading_user_line

    library = os.path.join(sysconfig.get_paths()["purelib"], "somelib", "values.py")
    scope: dict = {}
    code = "def convert(read):\n    return read()\n\ndef numpy(read):\n    return read()\n"
    exec(compile(code, library, "exec"), scope)  # noqa: S102 - functions that stand in a library's file

    def read():  # as the stream's wrapper asks, of the frame that called the read
        return reading_user_line(sys._getframe(1))

    here = sys._getframe()
    mine = reading_user_line(here)
    assert mine is not None and (mine.file, mine.code) == (__file__, "mine = reading_user_line(here)")
    assert scope["convert"](read) is None  # a library's own function read it
    through = scope["numpy"](read)  # a variable's own read method, called from this line
    assert through is not None and (through.file, through.code) == (
        __file__,
        'through = scope["numpy"](read)  # a variable\'s own read method, called from this line',
    )
