"""Hostile: pass messages to the next submission graded under the same sandbox uid. At import, look for what
an earlier submission left (kernel keyrings, /tmp, /dev/shm, SysV shared memory, message queues and semaphores,
POSIX message queues, abstract unix sockets), then leave a message in each (a forked holder keeps the abstract
socket bound); every call reports both: "CHANNELS found=[...] wrote=[...]"."""
import ctypes
import os
import platform
import socket
import time

PARAMS = {}

MARK = "grader-channel"
IPC_KEY = 0x67726164
KEY_SPECS = {"session": -3, "user": -4, "user-session": -5}
KEY_SYSCALLS = {"x86_64": {"add_key": 248, "keyctl": 250}, "aarch64": {"add_key": 217, "keyctl": 219},
                "riscv64": {"add_key": 217, "keyctl": 219}}.get(platform.machine(), {})
KEYCTL_SEARCH = 10
libc = ctypes.CDLL(None, use_errno=True)
try:
    mq_open = libc.mq_open
except AttributeError:  # glibc before 2.34
    mq_open = ctypes.CDLL("librt.so.1", use_errno=True).mq_open
mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]


def _syscall(name, *args):
    if name not in KEY_SYSCALLS:
        return -1
    return libc.syscall(ctypes.c_long(KEY_SYSCALLS[name]), *args)


def _lines(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except OSError:
        return []


def look():
    """What an earlier submission left behind."""
    found = []
    for name, spec in KEY_SPECS.items():
        if _syscall("keyctl", ctypes.c_long(KEYCTL_SEARCH), ctypes.c_long(spec), b"user", MARK.encode(),
                    ctypes.c_long(0)) >= 0:
            found.append(f"key in the {name} keyring")
    found += [f"/proc/keys: {line}" for line in _lines("/proc/keys") if " user " in line or MARK in line]
    for folder in ("/tmp", "/dev/shm"):
        found += [f"{folder}/{name}" for name in os.listdir(folder) if MARK in name]
    for kind, get in (("shm", lambda: libc.shmget(IPC_KEY, 0, 0)), ("msg", lambda: libc.msgget(IPC_KEY, 0)),
                      ("sem", lambda: libc.semget(IPC_KEY, 0, 0))):
        if get() >= 0:
            found.append(f"sysv {kind}")
        found += [f"/proc/sysvipc/{kind}: {line}" for line in _lines(f"/proc/sysvipc/{kind}")[1:]]
    fd = mq_open(f"/{MARK}".encode(), os.O_RDONLY, 0, None)
    if fd >= 0:
        found.append("mqueue")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect("\0" + MARK)
        found.append("abstract socket")
    except OSError:
        pass
    own = _own_sockets()
    found += [f"/proc/net/unix: {line}" for line in _lines("/proc/net/unix")[1:]
              if "@" in line and line.split()[6] not in own]
    return found


def _own_sockets():
    """The inodes of the sockets this process holds: the worker's own, CUDA's cuda-uvmfd socket among them (made
    when the device starts, before the import), are in the listing and are no message from anyone."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


def _hold_abstract_socket():
    """A forked child binds the abstract socket and keeps it, whatever happens to the worker."""
    ready_r, ready_w = os.pipe()
    if os.fork() == 0:
        try:
            os.closerange(3, ready_w)  # hold nothing of the worker's (its socket included)
            os.closerange(ready_w + 1, 1 << 16)
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind("\0" + MARK)
            server.listen()
            os.write(ready_w, b"1")
            while True:
                time.sleep(1)
        finally:
            os._exit(0)
    os.close(ready_w)
    bound = os.read(ready_r, 1) == b"1"
    os.close(ready_r)
    return bound


def leave():
    """Leave a message in every channel; the names of those that took it."""
    wrote = []
    payload = b"hello from an earlier submission"
    for name, spec in KEY_SPECS.items():
        if _syscall("add_key", b"user", MARK.encode(), payload, ctypes.c_size_t(len(payload)), ctypes.c_long(spec)) >= 0:
            wrote.append(f"key:{name}")
    for folder in ("/tmp", "/dev/shm"):
        try:
            with open(f"{folder}/{MARK}", "wb") as f:
                f.write(payload)
            wrote.append(folder)
        except OSError:
            pass
    if libc.shmget(IPC_KEY, 4096, 0o1666) >= 0:  # IPC_CREAT | 0666
        wrote.append("sysv shm")
    queue = libc.msgget(IPC_KEY, 0o1666)
    message = ctypes.create_string_buffer(8 + len(payload))
    ctypes.c_long.from_buffer(message).value = 1
    message[8:] = payload
    if queue >= 0 and libc.msgsnd(queue, message, ctypes.c_size_t(len(payload)), 0x800) == 0:  # IPC_NOWAIT
        wrote.append("sysv msg")
    if libc.semget(IPC_KEY, 1, 0o1666) >= 0:
        wrote.append("sysv sem")
    if mq_open(f"/{MARK}".encode(), os.O_CREAT | os.O_RDWR, 0o666, None) >= 0:
        wrote.append("mqueue")
    if _hold_abstract_socket():
        wrote.append("abstract socket")
    return wrote


FOUND = look()
WROTE = leave()


def _report():
    raise RuntimeError(f"CHANNELS found={FOUND} wrote={WROTE}")


def decoder_attention(s, H, return_weights=False):
    _report()


def quiz_answer():
    _report()
