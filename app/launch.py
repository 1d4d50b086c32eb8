"""The ``tfviz`` command: headless commands go to the library, the rest opens
the desktop app. Qt is imported only when a window is needed."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from tfviz import cli

    args = cli.parse_args(argv)
    if args.command == "check":
        return cli.main(argv)
    from app.main import run_app

    return run_app(getattr(args, "script", None), getattr(args, "target", None))


if __name__ == "__main__":
    sys.exit(main())
