"""Where the program is when a gradient entry point is reached: the user's frame and
line, its namespace, the replica, and whether TensorFlow is tracing a function graph."""

from __future__ import annotations

from typing import Any

from tfviz.report import Source
from tfviz.script.sourcemap import code_at, user_source


def frame_source(frame: Any) -> Source:
    line = frame.f_lineno
    return Source(frame.f_code.co_filename, line, code_at(frame.f_code.co_filename, line))


#: the local replica counted and captured: the first, or the one where ``--until`` fired
_CHOSEN = [0]


def choose_replica(local: int) -> None:
    """Count and capture local replica ``local`` from now on (see :func:`other_replica`)."""
    _CHOSEN[0] = local


def chosen_replica() -> int:
    return _CHOSEN[0]


def local_replica() -> int | None:
    """This process's index of the replica the code runs for (MultiWorkerMirroredStrategy
    numbers replicas across the cluster: every worker has a replica 0 of its own); None
    outside a strategy's replica context."""
    import tensorflow as tf

    ctx = tf.distribute.get_replica_context()
    if ctx is None:
        return None
    try:
        index = tf.get_static_value(ctx.replica_id_in_sync_group)
    except Exception:  # noqa: BLE001 - the default replica context
        return None
    return None if index is None else local_index(ctx.strategy, int(index))


def local_index(strategy: Any, replica: int) -> int:
    """Global replica id ``replica`` as this process's index of it (out of its range for
    another worker's replica)."""
    local = getattr(strategy.extended, "_get_local_replica_id", None)
    return int(local(replica)) if local is not None else replica


def other_replica() -> bool:
    """Whether this code runs for a replica other than the one counted and captured:
    tf.distribute runs the same step once per replica, and one is watched for the program's
    steps (its first, or the one ``--until`` fired on)."""
    local = local_replica()
    return local is not None and local != _CHOSEN[0]


def namespace(frame: Any) -> dict[str, Any]:
    ns = dict(frame.f_globals)
    if frame.f_code.co_name != "<module>":
        ns.update(frame.f_locals)
    return ns


def in_function_graph() -> bool:
    from tensorflow.python.framework import func_graph, ops

    return isinstance(ops.get_default_graph(), func_graph.FuncGraph)


def handles_captured() -> set[int]:
    """Ids of the eager tensors the function graphs being traced have captured so far: the
    variable handles the step has read (before its tape opened too), at every nesting level."""
    from tensorflow.python.framework import ops

    ids: set[int] = set()
    g = ops.get_default_graph()
    while g is not None and hasattr(g, "external_captures"):
        ids.update(id(t) for t in g.external_captures)
        g = getattr(g, "outer_graph", None)
    return ids


def outermost_graph() -> Any:
    from tensorflow.python.framework import ops

    g = ops.get_default_graph()
    while getattr(g, "outer_graph", None) is not None and hasattr(g.outer_graph, "outer_graph"):
        g = g.outer_graph
    return g


def user_line() -> Source | None:
    """The user's line that asked for the gradient (TensorFlow maps AutoGraph's
    generated code back to it, in the thread that started the trace)."""
    from tensorflow.python.util import tf_stack

    return user_source(tf_stack.extract_stack())
