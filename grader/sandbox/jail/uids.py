"""The sandbox's unprivileged uid, and leases of distinct uids for graders running side by side (batch jobs)."""
from __future__ import annotations

import errno
import fcntl
import os
import stat
import tempfile

from grader.sandbox.limits import proc_status


def sandbox_uid() -> int:
    """The uid workers run as: ``GRADER_SANDBOX_UID`` (a batch job sets its own; see ``lease_sandbox_uid``)."""
    return int(os.environ.get("GRADER_SANDBOX_UID", "64055"))


SANDBOX_UID = SANDBOX_GID = 0  # read from the environment (students never get to set it): here, and by a zygote


def from_environment() -> None:
    """Read the uid and gid workers run as: ``GRADER_SANDBOX_UID``, ``GRADER_SANDBOX_GID`` (default: the uid)."""
    global SANDBOX_UID, SANDBOX_GID
    SANDBOX_UID = sandbox_uid()
    SANDBOX_GID = int(os.environ.get("GRADER_SANDBOX_GID", str(SANDBOX_UID)))


from_environment()

UID_LOCK_DIR = "/run/grader/sandbox-uids" if os.geteuid() == 0 else os.path.join(
    tempfile.gettempdir(), f"grader-sandbox-uids-{os.geteuid()}")


def lease_sandbox_uid(first: int, count: int = 1000, lock_dir: str = UID_LOCK_DIR) -> tuple[int, int]:
    """The lowest uid of ``first`` .. ``first + count - 1`` that no live grader holds and no process runs as (a zombie
    included), and the fd that holds it.

    A uid is held by an exclusive ``flock`` on ``<lock_dir>/<uid>.lock``: keep the fd open for as long as workers
    may run as that uid; the kernel releases it when the process dies, however it dies. ``lock_dir`` must be a
    directory only this user may write (it is made so if missing), or anyone could hold every uid.
    """
    os.makedirs(lock_dir, 0o700, exist_ok=True)
    st = os.lstat(lock_dir)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise PermissionError(errno.EACCES, f"the sandbox uid lock folder must be a folder of uid {os.geteuid()} "
                              "that nobody else may write", lock_dir)
    for uid in range(first, first + count):
        fd = os.open(os.path.join(lock_dir, f"{uid}.lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if _tasks(uid)[0]:  # left by a grader killed where init does not reap: they count against RLIMIT_NPROC
            os.close(fd)
            continue
        return uid, fd
    raise RuntimeError(f"no free sandbox uid in {first}..{first + count - 1}: each is held by a grader or has processes left")


def census() -> str:
    """How many processes the uid that workers run as (the sandbox uid under root, else one's own) has on this
    machine, as RLIMIT_NPROC counts them, threads and zombies included: said with a worker that could not start,
    where a uid full of leftovers is a cause."""
    uid = sandbox_uid() if os.geteuid() == 0 else os.geteuid()
    try:
        tasks, zombies = _tasks(uid)
    except OSError as error:  # never in the way of the fault it is said with
        return f"uid {uid}'s processes could not be counted ({error.strerror or error})"
    return f"uid {uid} has {tasks} task{'s' * (tasks != 1)} on this machine, {zombies} of them zombies"


def _tasks(uid: int) -> tuple[int, int]:
    """The tasks (threads) of the processes whose real uid is ``uid``, and how many of those processes are zombies."""
    tasks = zombies = 0
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = proc_status(entry)
        except OSError:  # gone
            continue
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            tasks += int(fields.get("Threads", "1"))
            zombies += fields.get("State", "").startswith("Z")
    return tasks, zombies
