"""``tfviz``: the command line. TensorFlow is imported only when a command needs it.

The parser is built from the command table (:mod:`tfviz.commands.table`); each command is
a module of its own (:mod:`tfviz.commands`). Exit statuses: :class:`tfviz.exitstatus.ExitStatus`.
"""

from __future__ import annotations

import argparse
import os
import sys

from tfviz.commands.check import refuse_graph_path
from tfviz.commands.table import BY_NAME, add_parsers
from tfviz.exitstatus import ExitStatus
from tfviz.version import __version__

# refuse_graph_path is check's (tfviz.commands.check), named here as it was before the table.
__all__ = ["main", "parse_args", "refuse_graph_path"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tfviz",
        description="See why a TensorFlow model's gradients don't flow.",
        epilog="With no command, opens the desktop app (tfviz SCRIPT opens a script in it).",
    )
    p.add_argument("--version", action="version", version=f"tfviz {__version__}")
    add_parsers(p.add_subparsers(dest="command"))
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the command line; a bare script path means ``open SCRIPT``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    if "--" in argv:  # everything after it belongs to the user's program
        cut = argv.index("--")
        argv, script_args = argv[:cut], argv[cut + 1 :]
    if argv and argv[0] not in BY_NAME and not argv[0].startswith("-"):
        argv.insert(0, "open")
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        _refuse_unknown(parser, args, unknown)
    args.script_args = script_args
    return args


def _refuse_unknown(parser: argparse.ArgumentParser, args: argparse.Namespace, unknown: list[str]) -> None:
    """argparse's own error for arguments no option takes, with its command's usage; where the
    command runs a script, the way to hand them to it (``python train.py --lr 0.1`` is
    ``tfviz check train.py -- --lr 0.1``), for that is what they mostly are."""
    words = " ".join(unknown)
    command = BY_NAME.get(args.command or "")
    sub = _subparser(parser, command.name) if command is not None else None
    script = getattr(args, "script", None)
    if command is None or sub is None or not command.takes_program_args or not script:
        (sub or parser).error(f"unrecognized arguments: {words}")
    mine = "tfviz" if command.name == "open" else f"tfviz {command.name}"
    sub.error(
        f"unrecognized arguments: {words}\n"
        f"arguments for the script go after --: {mine} {script} [options] -- {words}"
    )


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser | None = action.choices.get(name)
            return found
    return None


def main(argv: list[str] | None = None) -> ExitStatus:
    """The headless commands. Opening the app is ``app.launch``'s job, since
    the library never imports the GUI."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # `tfviz check ... | head`: the reader left; say nothing more, keep the exit code sane.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return ExitStatus.ERROR


def _interrupt_on_termination() -> None:
    """SIGTERM and SIGHUP end a command as Ctrl-C does, so its worker and
    everything the user's program started are ended too, never left to init."""
    import signal

    from tfviz.exitstatus import Terminated

    statuses = {signal.SIGTERM: ExitStatus.TERMINATED, signal.SIGHUP: ExitStatus.HANGUP}

    def interrupt(signum: int, _frame: object) -> None:
        raise Terminated(signal.Signals(signum).name, statuses[signal.Signals(signum)])

    for sig in statuses:
        signal.signal(sig, interrupt)


def _main(argv: list[str] | None) -> ExitStatus:
    args = parse_args(argv)
    _interrupt_on_termination()
    # No command means the app, whose command (open) says to start it from `tfviz`.
    return BY_NAME[args.command or "open"].module.run(args)


if __name__ == "__main__":
    sys.exit(main())
