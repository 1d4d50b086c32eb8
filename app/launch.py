"""The ``tfviz`` command: headless commands go to the library, the rest opens
the desktop app. Which are headless is the command table's to say
(:data:`tfviz.commands.table.HEADLESS`). Qt is imported only when a window is needed."""

from __future__ import annotations

import sys

from tfviz.exitstatus import ExitStatus


def main(argv: list[str] | None = None) -> int:
    from tfviz import cli
    from tfviz.commands.table import HEADLESS

    argv = list(sys.argv[1:] if argv is None else argv)
    # The program's arguments are everything after the first "--", wherever tfviz's own
    # options stand (`tfviz open train.py --step 2 -- --lr 0.1`).
    own, rest = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    args = cli.parse_args(own)
    if args.command in HEADLESS:
        return cli.main(argv)
    from .main import run_app

    script_args = [*(getattr(args, "script_args", None) or []), *rest]
    run = bool(getattr(args, "run", False))
    target = getattr(args, "target", None)
    if target and (run or script_args):
        print(
            "tfviz: --target calls a function; --run and script arguments are for running the"
            " program: use one or the other",
            file=sys.stderr,
        )
        return ExitStatus.ERROR
    return run_app(
        getattr(args, "script", None),
        target,
        run=run,
        args=script_args if script_args else None,
        step=getattr(args, "step", 1),
    )


if __name__ == "__main__":
    sys.exit(main())
