"""A worker and everything the user's program starts are one process group.

The program may start helpers (``subprocess.Popen``, a daemonic
``multiprocessing.Process``, ``os.fork``). Plain ``python`` would end a
daemonic child at exit, but a worker ends with ``os._exit`` at the step, and
a killed worker leaves its children to init. So the worker leads a session
of its own, and whoever ends it (itself, its client, or its own watch on a
client that died) ends the whole group. A helper that starts a session of
its own (a daemon that calls ``setsid``) leaves the group and is not ended.
"""

from __future__ import annotations

import os
import signal


def lead_own_group() -> None:
    """Make this process the leader of a new session and process group."""
    try:
        os.setsid()
    except OSError:  # already a group leader (started by a shell as a job): it leads its group
        pass


def end_group(pgid: int) -> None:
    """SIGKILL every process left in the group ``pgid`` (a worker's pid)."""
    if pgid <= 0 or pgid == os.getpgid(0):
        return  # never our own group from the outside: that is the caller itself
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # nothing left in it


def end_rest_of_group() -> None:
    """SIGKILL the other members of this process's group, leaving this one to exit."""
    me, group = os.getpid(), os.getpgid(0)
    if group != me:
        return  # not a group of our own: its other members are not ours to end
    for pid in _members(group):
        if pid != me:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def end_own_group() -> None:
    """SIGKILL this process's group, this process included (its client is gone)."""
    if os.getpgid(0) == os.getpid():
        os.killpg(0, signal.SIGKILL)
    os._exit(4)


def _processes() -> list[tuple[int, int, int, str]]:
    """Every process as (pid, parent pid, process group, command name), from /proc; none
    where there is no /proc."""
    out = []
    try:
        entries = os.listdir("/proc")
    except OSError:  # pragma: no cover - not Linux
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses
        comm = stat[stat.find(b"(") + 1 : stat.rfind(b")")].decode("utf-8", "replace")
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2:
            out.append((int(entry), int(fields[1]), int(fields[2]), comm))
    return out


def _members(group: int) -> list[int]:
    """The pids in a process group."""
    return [pid for pid, _, pgrp, _ in _processes() if pgrp == group]


def left_the_group() -> list[tuple[int, str]]:
    """This process's children that left its process group (a helper started with
    ``start_new_session=True``, or one that called ``setsid``): ending the group will not
    end them. (pid, command name) of each still running."""
    me, group = os.getpid(), os.getpgid(0)
    return [(pid, comm) for pid, ppid, pgrp, comm in _processes() if ppid == me and pgrp != group]
