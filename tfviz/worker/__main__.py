"""``python -m tfviz.worker``: one analysis in a process of its own (:mod:`tfviz.worker`)."""

from __future__ import annotations

import os
import signal
import sys

from tfviz.procgroup import end_rest_of_group, lead_own_group
from tfviz.worker.forkserver import hand_over

lead_own_group()
# A warm server, when one is named, forks the worker; this process then stands for it.
status = hand_over()
if status is not None:
    if status < 0:  # ended by a signal: so is this process, as its client expects
        if -status != signal.SIGKILL:
            signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    os._exit(status & 0xFF)

from tfviz.worker.server import main, remove_generated_files, watch_parent  # noqa: E402

watch_parent()
code = main()
sys.stdout.flush()
remove_generated_files()
# What the program started ends with it, as its daemonic children would under python;
# threads it left running must not keep the worker alive.
end_rest_of_group()
os._exit(code)
