"""Writes what a program can tell of the process it runs in to the file named by argv[1]."""

import faulthandler
import gc
import json
import os
import random
import signal
import sys
import threading

import numpy as np
import tensorflow as tf


def disposition(sig):
    handler = signal.getsignal(sig)
    if isinstance(handler, signal.Handlers):
        return handler.name
    return getattr(handler, "__name__", str(handler))


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[1])


facts = {
    "pid": os.getpid(),
    "grandparent": parent_of(os.getppid()) if os.path.isdir("/proc") else None,
    "leads_its_group": os.getpgid(0) == os.getpid(),
    "leads_its_session": os.getsid(0) == os.getpid(),
    "cwd": os.getcwd(),
    "umask": os.umask(0o22),
    "argv": sys.argv[1:],
    "path0": sys.path[0],
    "probe": os.environ.get("TFVIZ_FACTS_PROBE"),
    "signals": {name: disposition(getattr(signal, name))
                for name in ("SIGINT", "SIGHUP", "SIGTERM", "SIGPIPE", "SIGCHLD", "SIGUSR1")},
    "stdin": sys.stdin.read(),
    "faulthandler": faulthandler.is_enabled(),
    "threads": sorted(t.name for t in threading.enumerate()),
    "random": random.random(),
    "numpy_random": float(np.random.rand()),
    "tensorflow": tf.__version__,
    "gc_frozen": gc.get_freeze_count(),
}
with open(sys.argv[1], "w") as fh:
    json.dump(facts, fh)
