"""``python -m tfviz.worker``: one analysis in a process of its own (:mod:`tfviz.worker`)."""

from __future__ import annotations

import os
import sys

from tfviz.procgroup import end_rest_of_group, lead_own_group
from tfviz.worker.server import main, remove_generated_files, watch_parent

lead_own_group()
watch_parent()
code = main()
sys.stdout.flush()
remove_generated_files()
# What the program started ends with it, as its daemonic children would under python;
# threads it left running must not keep the worker alive.
end_rest_of_group()
os._exit(code)
