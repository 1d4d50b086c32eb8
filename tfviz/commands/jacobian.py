"""``tfviz jacobian SCRIPT --wrt NAME [--of TENSOR] [--via TENSOR] [-o FILE]``.

Exit status (:class:`~tfviz.exitstatus.ExitStatus`): 0 (OK) a Jacobian was computed;
1 (PROBLEMS) the answer is not a matrix (no path, or the path is cut: the op is named);
2 (ERROR) the request or the script could not be served (a bad name gets its close
matches), or ``-o`` cannot be written; 130 (INTERRUPTED) Ctrl-C.

``-o`` follows ``tfviz export``'s rules (:func:`tfviz.outputs.check_output`), checked
before anything runs: a regular file or a new name in an existing folder, never the
script, never a file tfviz did not write unless ``--force``. The CSV starts with a
``# written by tfviz`` comment line and the PNG carries it in a text chunk, so tfviz
knows them again; a ``.npy`` header has no room for it, so an existing one needs ``--force``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from tfviz.commands.args import command_parser, positive
from tfviz.exitstatus import ExitStatus, interrupted
from tfviz.worker.messages import Failure, JacobianAnswer, JacobianError, JacobianProgress, Progress

if TYPE_CHECKING:
    from tfviz.commands.args import Subparsers
    from tfviz.jacobian.data import ChainSplit, Jacobian
    from tfviz.worker.client import WorkerClient

# NumPy and the Jacobian's data are imported where a Jacobian is read: every command's
# start (``tfviz check`` in CI, on each save) loads this table, and NumPy was half of it.

WRITERS = (".npy", ".png", ".csv")


def add_parser(sub: Subparsers) -> None:
    j = command_parser(
        sub,
        "jacobian",
        summary="per-element Jacobian d out/d in between two tensors of the graph",
        usage="tfviz jacobian SCRIPT --wrt NAME [--of TENSOR] [--via TENSOR] [--of-index SPEC]"
        " [--wrt-index SPEC] [-o FILE] [-- ARGS]",
        description="Compute the Jacobian of one tensor of the analyzed step with respect to a"
        " variable or another tensor, element by element, where tf.gradients would sum over"
        " the outputs. It is printed, or written as a NumPy array, a heatmap or CSV.",
        notes="TENSOR is a graph op id as the graph view shows it (optionally :k for output k),"
        " or 'target'. NAME is a variable's name or tf_name, or a TENSOR. SPEC has one entry per"
        " dimension: N (that index), ':' (all) or A:B.",
        examples=[
            ("tfviz jacobian model.py --wrt w", "d loss / d w, every element"),
            ("tfviz jacobian model.py --of dense/BiasAdd --wrt x -o J.png", "a heatmap of d dense / d x"),
            ("tfviz jacobian model.py --of pred --wrt w", "d pred / d w, for the script's pred = ..."),
            ("tfviz jacobian cnn.py --of conv/Conv2D --of-index 0,:,:,3 --wrt x", "example 0, channel 3"),
            ("tfviz jacobian model.py --of target --via h --wrt w", "the chain-rule split through h"),
        ],
    )
    j.add_argument("script", help="the training script or notebook (or one that defines loss())")
    j.add_argument("--target", metavar="NAME", help="the function to differentiate (as for tfviz check)")
    j.add_argument("--run", action="store_true", help="run the script as a program")
    j.add_argument(
        "--step", type=positive, default=1, metavar="N", help="the program's N-th step (default: 1)"
    )
    j.add_argument(
        "--of",
        default="target",
        metavar="TENSOR",
        help="the output: an op id as the graph shows it (dense/BiasAdd), or the name the script"
        " assigns the value to (pred, for pred = ...) (default: target)",
    )
    j.add_argument(
        "--wrt", required=True, metavar="NAME", help="the input: a variable, or a tensor as for --of"
    )
    j.add_argument(
        "--via", metavar="TENSOR", help="print the chain-rule split J(of,via) @ J(via,wrt) against J(of,wrt)"
    )
    j.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write J (J(of,wrt) with --via) as .npy, .png (heatmap) or .csv",
    )
    j.add_argument(
        "--force",
        action="store_true",
        help="let -o replace an existing file tfviz did not write (never the script)",
    )
    j.add_argument(
        "--of-index",
        metavar="SPEC",
        help="only these output elements, per dimension: N, ':' (all) or A:B (e.g. 0,:,:,3)",
    )
    j.add_argument(
        "--wrt-index",
        metavar="SPEC",
        help="only these input elements, per dimension (e.g. :,:,:,5: one conv filter)",
    )
    j.add_argument(
        "--out-range",
        metavar="START:STOP",
        help="only these flat output elements (of those --of-index selects)",
    )
    j.add_argument("--in-range", metavar="START:STOP", help="only these flat input elements")
    j.add_argument(
        "--mode",
        choices=("auto", "reverse", "forward"),
        default="auto",
        help="reverse (a row per output), forward (a column per input) or auto: whichever"
        " needs fewer passes (default: auto)",
    )
    j.add_argument(
        "--budget-mb",
        type=float,
        default=512.0,
        metavar="MB",
        help="refuse a Jacobian larger than this many MiB (default: 512)",
    )
    j.add_argument("--json", action="store_true", help="print the answer as JSON (values as lists)")


def _range(text: str | None, flag: str = "--out-range") -> list[int] | None:
    """``START:STOP`` as ``[START, STOP]``; raises AnalysisError (exit 2, one line) for
    anything else, before the script runs. Whether STOP fits the tensor is the worker's
    to say, once the tensor is known.

    >>> _range("0:10"), _range(None)
    ([0, 10], None)
    """
    from tfviz.errors import AnalysisError

    if text is None:
        return None
    a, colon, b = text.partition(":")
    try:
        start, stop = int(a), int(b)
    except ValueError:
        start = stop = -1
    if not colon or not 0 <= start < stop:
        raise AnalysisError(
            f"{flag} takes START:STOP, flat element indices with 0 <= START < STOP (e.g. 0:10), not {text!r}"
        )
    return [start, stop]


def _spec(text: str | None, flag: str) -> list[Any] | None:
    """A slice spec (``0,:,:,3``); raises AnalysisError (exit 2) for bad syntax before the script
    runs. Whether it fits the tensor's shape is the worker's to say."""
    from tfviz.errors import AnalysisError
    from tfviz.jacobian.slices import parse_spec

    if text is None:
        return None
    try:
        return parse_spec(text, flag)
    except ValueError as exc:
        raise AnalysisError(str(exc)) from None


def run(args: argparse.Namespace) -> ExitStatus:
    from tfviz.errors import AnalysisError
    from tfviz.outputs import check_output
    from tfviz.script.loader import compile_script

    try:
        if args.output:
            ext = os.path.splitext(args.output)[1].lower()
            if ext not in WRITERS:
                raise AnalysisError(f"-o must end in {', '.join(WRITERS)}", file=args.output)
            check_output(
                args.output,
                args.script,
                args.force,
                flag="-o",
                why_not_ours=(" (a .npy file cannot say what wrote it)" if ext == ".npy" else ""),
            )
        args.out_range = _range(args.out_range, "--out-range")
        args.in_range = _range(args.in_range, "--in-range")
        args.of_index = _spec(args.of_index, "--of-index")
        args.wrt_index = _spec(args.wrt_index, "--wrt-index")
        if args.via and (args.of_index or args.wrt_index):
            raise AnalysisError("--via compares whole Jacobians: leave out --of-index / --wrt-index")
        compile_script(args.script)
    except AnalysisError as exc:
        print(f"tfviz: {exc}", file=sys.stderr)
        return ExitStatus.ERROR
    from tfviz.worker.client import WorkerClient

    worker = WorkerClient(on_progress=_progress if sys.stderr.isatty() else None)
    try:
        return _serve(worker, args)
    except KeyboardInterrupt as exc:
        worker.kill()
        what, status = interrupted(exc)
        print(f"tfviz: interrupted ({what})", file=sys.stderr)
        return status
    finally:
        worker.close()


def _serve(worker: WorkerClient, args: argparse.Namespace) -> ExitStatus:
    answer = worker.analyze(
        {
            "cmd": "analyze",
            "script": os.path.abspath(args.script),
            "target": args.target,
            "run": args.run,
            "args": list(args.script_args),
            "step": args.step,
            "allow_empty": True,
            "keep": True,
        }
    )
    if isinstance(answer, Failure):
        from tfviz.errors import AnalysisError

        err = answer.error
        exc = AnalysisError(
            str(err.get("message") or "the analysis failed"),
            file=err.get("file"),
            line=err.get("line"),
            code=err.get("code") or "",
        )
        print(f"tfviz: {exc}", file=sys.stderr)
        return ExitStatus.ERROR
    request = {
        "cmd": "jacobian",
        "id": 1,
        "of": args.of,
        "wrt": args.wrt,
        "via": args.via,
        "out_range": args.out_range,
        "in_range": args.in_range,
        "of_index": args.of_index,
        "wrt_index": args.wrt_index,
        "mode": args.mode,
        "budget_mb": args.budget_mb,
    }
    reply = worker.request(request, until=frozenset({JacobianAnswer.type, JacobianError.type}))
    if not isinstance(reply, JacobianAnswer):
        return _refused(reply.error if isinstance(reply, (JacobianError, Failure)) else {}, args.json)
    body = reply.chain or reply.result or {}
    if args.json:
        print(json.dumps(_as_lists(body)))
    from tfviz.jacobian.data import ChainSplit, Jacobian
    from tfviz.jacobian.files import write

    if reply.chain is not None:
        split = ChainSplit.from_dict(reply.chain)
        if not args.json:
            _print_chain(split)
        main = split.j_yx
    else:
        main = Jacobian.from_dict(body)
        if not args.json:
            _print_one(main)
    if main.status != "ok":
        return ExitStatus.PROBLEMS
    if args.output:
        try:
            write(args.output, main)
        except OSError as exc:  # an OutputError says why in words; others are the system's
            print(f"tfviz: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return ExitStatus.ERROR
        print(f"wrote {args.output}", file=sys.stderr)
    return ExitStatus.OK


def _as_lists(body: dict[str, Any]) -> dict[str, Any]:
    from tfviz.jacobian.data import Array

    def walk(v: Any) -> Any:
        if isinstance(v, dict) and v.get("encoding") == "base64" and "dtype" in v:
            return Array.from_dict(v).to_dict("list")
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    lists: dict[str, Any] = walk(body)
    return lists


def _describe(j: Jacobian) -> str:
    from tfviz.jacobian.slices import format_spec

    def pick(spec: list[Any] | None) -> str:
        return f"[{format_spec(spec)}]" if spec else ""

    return (
        f"J({j.of.name}{pick(j.out_index)} {tuple(j.of.shape)},"
        f" {j.wrt.name}{pick(j.in_index)} {tuple(j.wrt.shape)})"
    )


def _print_one(j: Jacobian) -> None:
    import numpy as np

    from tfviz.jacobian.data import fmt_bytes

    if j.status != "ok":
        print(f"{_describe(j)}: {j.status.replace('_', ' ')}: {j.message}")
        if j.cut is not None and j.cut.file:
            print(f"    at {j.cut.file}:{j.cut.line}")
        return
    values = j.array()
    assert values is not None
    print(
        f"{_describe(j)}: shape {tuple(values.shape)}, {fmt_bytes(values.nbytes)},"
        f" {j.mode} mode, {j.chunks} chunk(s), {j.seconds:.3f} s"
    )
    if values.size <= 144:
        with np.printoptions(precision=5, suppress=True, linewidth=100):
            print(values.reshape(-1, values.shape[-1]) if values.ndim else values)


def _print_chain(s: ChainSplit) -> None:
    for label, j in (("J(y,h)", s.j_yh), ("J(h,x)", s.j_hx), ("J(y,x)", s.j_yx)):
        values = j.array() if j.status == "ok" else None
        shape = tuple(values.shape) if values is not None else j.status
        print(f"{label} = {_describe(j)}: {shape}")
    if s.max_abs_diff is not None and s.tf_gradients is not None:  # set together (chain_split)
        print(f"max |J(y,h) @ J(h,x) - J(y,x)| = {s.max_abs_diff:.3g}")
        print(
            f"tf.gradients(y, x): shape {tuple(s.tf_gradients.shape)} = J(y,x) summed over y;"
            f" max |difference| = {s.tf_gradients_diff:.3g}"
        )
    print(s.message)


def _refused(err: dict[str, Any], as_json: bool) -> ExitStatus:
    from tfviz.jacobian.data import fmt_bytes

    if as_json:
        print(json.dumps({"ok": False, "error": err}))
    print(f"tfviz: {err.get('message', 'the Jacobian could not be computed')}", file=sys.stderr)
    if err.get("candidates"):
        print(f"tfviz: close matches: {', '.join(err['candidates'])}", file=sys.stderr)
    for offer in err.get("offers") or []:
        print(f"tfviz: try {_offer_flags(offer)} ({fmt_bytes(offer['bytes'])})", file=sys.stderr)
    return ExitStatus.ERROR


def _offer_flags(offer: dict[str, Any]) -> str:
    """The command-line flags of a ``too_big`` offer.

    >>> _offer_flags({"of_index": [0, None], "wrt_index": None})
    '--of-index 0,:'
    """
    from tfviz.jacobian.slices import format_spec

    flags = []
    for key, flag in (("of_index", "--of-index"), ("wrt_index", "--wrt-index")):
        if offer.get(key):
            flags.append(f"{flag} {format_spec(offer[key])}")
    for key, flag in (("out_range", "--out-range"), ("in_range", "--in-range")):
        if offer.get(key):
            flags.append(f"{flag} {offer[key][0]}:{offer[key][1]}")
    return " ".join(flags)


def _progress(msg: Progress | JacobianProgress) -> None:
    if isinstance(msg, Progress):
        print(f"tfviz: {msg.stage}…", file=sys.stderr, flush=True)
    else:
        print(f"tfviz: chunk {msg.done}/{msg.total}", file=sys.stderr, flush=True)
