"""``python -m tfviz``: the ``tfviz`` command, where its script is not on ``PATH`` (a virtual
environment not activated, a notebook's ``!python -m tfviz check train.py``).

It runs the installed console script's entry point, so it opens the window as ``tfviz``
does; found through the package's metadata, since the library never imports the app.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points


def main() -> int:
    for entry in entry_points(group="console_scripts", name="tfviz"):
        if entry.value.split(".", 1)[0] in ("tfviz_app", "app"):
            return int(entry.load()())
    from tfviz.cli import main as headless  # installed without its app: the commands only

    return int(headless())


if __name__ == "__main__":
    sys.exit(main())
