"""Cluster jobs on one machine, for the tests and the benchmark: free localhost ports, and
each task's ``TF_CONFIG``."""

from __future__ import annotations

import json
import random
import socket
from pathlib import Path


def free_ports(n: int) -> list[int]:
    """``n`` ports free now, below the range the system hands out for outgoing connections:
    a port taken from that range could be handed to another process's connection before the
    job binds it, and a worker that cannot bind leaves the others waiting for it."""
    low, _ = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    ports: list[int] = []
    while len(ports) < n:
        port = random.randrange(max(1024, low - 12000), low)
        with socket.socket() as s:
            try:
                s.bind(("localhost", port))
            except OSError:
                continue
        if port not in ports:
            ports.append(port)
    return ports


def tf_config(ports: list[int], i: int, chief: bool = False) -> str:
    """Task ``i``'s ``TF_CONFIG`` in a job on ``ports``: with ``chief``, task 0 is the job's
    ``chief`` and the others ``worker`` 0, 1, ...; else all are workers."""
    hosts = [f"localhost:{p}" for p in ports]
    cluster = {"chief": hosts[:1], "worker": hosts[1:]} if chief else {"worker": hosts}
    task = {"type": "chief", "index": 0} if chief and i == 0 else {"type": "worker", "index": i - chief}
    return json.dumps({"cluster": cluster, "task": task})
