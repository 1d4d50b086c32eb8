"""``%load_ext tfviz``: the ``%tfviz`` line magic in IPython and Jupyter.

- ``%tfviz check`` checks the notebook's ``loss`` function, on its live objects;
- ``%tfviz check NAME`` checks the function ``NAME`` of the notebook, and ``%tfviz check
  train_step x y`` the training step ``train_step(x, y)``, stopped before its update;
- ``%tfviz check train.py [--step N] [--function F] [-- ARGS...]`` checks a script or
  notebook file, as ``tfviz check`` does; with ``--until nan`` a chart of each layer's
  gradient norm follows the training as it runs.

The magic returns the :class:`tfviz.Report`, which the notebook shows (graph, problems,
variables); a target that cannot be checked prints the command's one-line message instead of
a traceback.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

USAGE = (
    "%tfviz check [NAME | PATH [--step N | --until COND [--max-steps N]] [--function F] [--run] [-- ARGS...]]"
)


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magic_function(_magic(ipython), magic_kind="line", magic_name="tfviz")


class _Refused(Exception):
    """What argparse would print before it exits: the magic says it in one line instead."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own exits the kernel's cell with usage twice
        raise _Refused(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="%tfviz check", add_help=False, exit_on_error=False)
    p.add_argument("target", nargs="?", default="loss")
    p.add_argument("values", nargs="*", help="a step function's arguments: names in the notebook")
    p.add_argument("--step", type=int, default=1)
    p.add_argument("--until")
    p.add_argument("--max-steps", type=int)
    p.add_argument("--function")
    p.add_argument("--run", action="store_true")
    p.add_argument("--allow-empty", action="store_true")
    return p


def _magic(ipython: Any) -> Any:
    def tfviz(line: str) -> Any:
        from tfviz import api
        from tfviz.errors import AnalysisError

        words = shlex.split(line)
        if not words or words[0] != "check":
            print(f"usage: {USAGE}", file=sys.stderr)
            return None
        words, script_args = _split(words[1:])
        try:
            args, unknown = _parser().parse_known_args(words)
            if unknown:
                raise _Refused(f"unrecognized arguments: {' '.join(unknown)}{_after_dashes(words, unknown)}")
        except (argparse.ArgumentError, _Refused) as exc:
            print(f"tfviz: {exc}\nusage: {USAGE}", file=sys.stderr)
            return None
        target: Any = args.target
        looks_like_path = target.endswith((".py", ".ipynb")) or "/" in target
        if not looks_like_path:
            if target not in ipython.user_ns:
                print(
                    f"tfviz: the notebook has no {target!r}: define {target}() returning the loss,"
                    " or name a script (%tfviz check train.py)",
                    file=sys.stderr,
                )
                return None
            target = ipython.user_ns[target]
        missing = [v for v in args.values if v not in ipython.user_ns]
        if missing or (args.values and looks_like_path):
            why = f"the notebook has no {missing[0]!r}" if missing else "a script's arguments go after --"
            print(f"tfviz: {why}\nusage: {USAGE}", file=sys.stderr)
            return None
        try:
            if looks_like_path:
                return api.check(
                    target,
                    step=args.step,
                    until=args.until,
                    max_steps=args.max_steps,
                    function=args.function,
                    run=args.run,
                    args=script_args,
                    allow_empty=args.allow_empty,
                )
            values = tuple(ipython.user_ns[v] for v in args.values)
            return api.check(target, args=values, allow_empty=args.allow_empty)
        except (AnalysisError, TypeError, ValueError) as exc:
            print(f"tfviz: {exc}", file=sys.stderr)
            return None

    tfviz.__doc__ = __doc__
    return tfviz


def _after_dashes(words: list[str], unknown: list[str]) -> str:
    """Where the magic was handed a script, the reminder that the script's own arguments
    go after ``--`` (an unknown ``--lr 0.1`` is mostly that); else nothing."""
    if not words or not words[0].endswith((".py", ".ipynb")):
        return ""
    return f"; a script's arguments go after --: %tfviz check {words[0]} -- {' '.join(unknown)}"


def _split(words: list[str]) -> tuple[list[str], list[str]]:
    """The magic's own words, and the script's after ``--``."""
    if "--" in words:
        cut = words.index("--")
        return words[:cut], words[cut + 1 :]
    return words, []
