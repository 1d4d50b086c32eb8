"""The analysis worker: ``python -m tfviz.worker``, and its clients.

It imports TensorFlow at once, says ``ready``, then waits for one request on
stdin and answers with JSON lines on stdout. One process serves one analysis
and exits, so every analysis starts from a clean TensorFlow state, and a
crash or hang in the user's script cannot touch the caller.

Messages (one JSON object per line):

- ``{"type": "ready", "tensorflow": "2.21.0", "pid": 123}``
- ``{"type": "progress", "stage": "tracing the graph", "fraction": 0.5}``
- ``{"type": "log", "stream": "stdout"|"stderr", "text": "..."}``
- ``{"type": "steps", "points": [...]}`` (``check --until`` with ``live``: below)
- ``{"type": "result", "report": {...}}`` (a full :class:`tfviz.report.Report`)
- ``{"type": "error", "error": {"message", "file", "line", "code", "detail", "candidates"}}``

Request (one line on stdin)::

    {"cmd": "analyze", "script": "/path/x.py", "target": null,
     "run": false, "args": [], "step": 1}

- ``target``: a zero-argument function to differentiate (null: ``loss`` when
  the script defines it, else the program is run).
- ``run`` (optional, default false): run the script as a program even if it
  defines ``loss()``.
- ``args`` (optional, default ``[]``): the program's command line, as
  ``python SCRIPT ARGS…`` would get it (``sys.argv[1:]``).
- ``step`` (optional, default 1): diagnose the program's N-th gradient
  computation.
- ``until`` (optional): condition names (``nan``, ``none``, ``zero``,
  ``vanishing``, ``exploding``): watch every step and diagnose the first where
  one holds; ``step`` is then the most steps to run. ``zero_steps`` (how many
  zero steps in a row ``zero`` waits for) and ``record`` (a CSV file written per
  step and variable) go with it.
- ``result_output`` (optional, default ``"full"``): ``"tail"`` keeps only the
  last 64 KB of the script's stdout and stderr in the result, for a caller
  that shows the ``log`` messages (the window).
- ``printed`` (optional): ``{"format": "text"|"json"|"github"|"sarif", "color": bool, "cwd": "/dir",
  "graph": "/path/g.json"|null}``, what ``tfviz check`` prints. The worker renders the
  report as the command would print it (paths relative to ``cwd``), writes ``graph`` when
  given, and answers ``{"type": "result", "report": {...}, "printed": "...",
  "graph_error": "..."}``, whose report holds the graph's counts, not the graph;
  ``graph_error`` is there only when the file could not be written.

- ``live`` (optional, default false): with ``until``, send each watched step's
  norms per layer as ``{"type": "steps", "points": [{"step", "grad", "update",
  "weight"}, ...]}`` messages while the program runs (at most one every 0.1 s).
- ``keep`` (optional, default false): keep the session after the result
  and answer ``jacobian`` requests (below).

These are :func:`tfviz.analysis.diagnose.analyze`'s arguments. A malformed request
(``args`` not a list of strings, ``step`` not a whole number ≥ 1) is answered
with an ``error`` message. While a program runs, whatever it prints is sent
as ``log`` messages of at most 64 KB, each sent within 50 ms of its first
character (:mod:`tfviz.worker.logbatch`).


Keeping the session (``"keep": true``)
--------------------------------------

With ``"keep": true`` in the ``analyze`` request the worker does not exit
after its ``result``: it keeps the analyzed session (the loaded script, its
variables, the traced graph) and answers further requests, one JSON line
each, until its stdin closes or it gets ``{"cmd": "close"}``. A new analysis
is a new worker (every analysis starts from a clean TensorFlow state): close
this one's stdin. Requests (see ``docs/jacobian.md`` for the full reference):

- ``{"cmd": "jacobian", "id": ID, "of": "target"|TENSOR, "wrt": NAME,
  "via": TENSOR|null, "out_range": [start, stop]|null,
  "in_range": [start, stop]|null, "of_index"/"wrt_index": [index|null|[start, stop], ...]|null,
  "mode": "auto"|"reverse"|"forward",
  "budget_mb": 512, "encoding": "base64"|"list"}``: the Jacobian
  d of / d wrt (a TENSOR is a graph op id, optionally ``:k``; a NAME is a
  variable's name or tf_name, or a TENSOR). With ``via``, the chain-rule
  split through that tensor.
- ``{"cmd": "cancel", "id": ID}``: stop that request at its next chunk.
- ``{"cmd": "names", "id": ID}``: every name a request may use.
- ``{"cmd": "close"}``: end the worker.

Answers carry the request's ``id``:

- ``{"type": "jacobian_progress", "id", "done", "total"}`` (chunks);
- ``{"type": "jacobian", "id", "result": {...}}``
  (:class:`tfviz.jacobian.data.Jacobian`: ``status`` ok / no_path / cut,
  ``values`` as ``{"dtype", "shape", "data", "encoding"}``, base64 of the
  raw little-endian bytes) or ``{"type": "jacobian", "id", "chain": {...}}``
  (:class:`tfviz.jacobian.data.ChainSplit`) for a ``via`` request;
- ``{"type": "names", "id", "names": [...]}``;
- ``{"type": "jacobian_error", "id", "error": {"kind", "message", ...}}``:
  ``not_found`` (``candidates``), ``not_reachable``, ``too_big``
  (``size_bytes``, ``budget_bytes``, ``offers``), ``cancelled``, ``replay``,
  ``unsupported``, ``bad_request``, ``internal``. The session lives on.

An ``id`` is a string or a number (or absent). Each request is checked into a typed
message first (:mod:`tfviz.worker.requests`): one that is not JSON, has another kind of
``id`` or a field of the wrong type gets a ``bad_request`` answer, in order, carrying its
``id`` when the id itself was fine, and the session serves the next. Closing stdin always
ends the worker (after the request it is computing).

The package
-----------

- :mod:`~tfviz.worker.launch`: the one command line and environment a worker starts with;
- :mod:`~tfviz.worker.server`: the process's side (the channel, the analysis);
- :mod:`~tfviz.worker.session`: the kept session's loop, which serves its requests;
- :mod:`~tfviz.worker.requests`: a kept session's requests, checked into typed messages;
- :mod:`~tfviz.worker.messages`: the answers, as typed messages both clients decode;
- :mod:`~tfviz.worker.logbatch`: the script's output, batched into few ``log`` messages;
- :mod:`~tfviz.worker.client`: the blocking client ``tfviz check`` and ``tfviz jacobian``
  use (the window's is :mod:`app.worker_client`, on Qt's event loop).
"""
