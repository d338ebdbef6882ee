"""A Dask cluster of separate processes on localhost, started the way a university cluster or Kubernetes starts one.

``dask_cluster`` runs ``dask scheduler`` and ``dask worker --nworkers N --nthreads 1`` as their own processes (not
a LocalCluster inside the batch), waits for every worker to join, yields the scheduler's address for
``grader batch --dask``, and takes every process down again (each in a session of its own, killed as a group).
Used by tests/grading/test_batch.py and benchmarks/batch.py.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from grader import ROOT

START_SECONDS = 120  # for the scheduler to listen and every worker to join
STOP_SECONDS = 30  # for a process group to exit after SIGTERM, before SIGKILL


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def dask_cluster(hosts: int = 2, processes: int = 1) -> Iterator[str]:
    """A scheduler and ``hosts`` ``dask worker`` commands of ``processes`` single-threaded worker processes each."""
    from distributed import Client

    address = f"tcp://127.0.0.1:{_free_port()}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    commands = [["scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1], "--no-dashboard"]]
    commands += [["worker", address, "--nworkers", str(processes), "--nthreads", "1", "--no-dashboard",
                  "--death-timeout", str(START_SECONDS)]] * hosts
    started: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory() as scratch:
        try:
            for command in commands:
                started.append(subprocess.Popen([sys.executable, "-m", "dask", *command, *(
                    ["--local-directory", scratch] if command[0] == "worker" else [])], cwd=scratch, env=env,
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    start_new_session=True))
            with Client(address, timeout=START_SECONDS) as client:
                client.wait_for_workers(hosts * processes, timeout=START_SECONDS)
            yield address
        finally:
            for process in reversed(started):  # workers first, then the scheduler
                _stop(process)


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the process's group, then (after it exits or ``STOP_SECONDS``) SIGKILL to whatever is left of it."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            pass
    process.wait()
