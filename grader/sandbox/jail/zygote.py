"""The zygote: a fresh interpreter that imports torch once and forks the sandboxed workers (``worker``).

The grading process starts it with a clean environment (so it shares no memory with the grader), through
``lifeline``, and asks it for workers over a control socket. A batch's jobs each need a zygote: they get theirs from
a template (``template_main``), a zygote's fresh interpreter that forks a new zygote for each job that asks, so torch
is imported once per batch rather than once per job (~1.2 s of CPU each). A zygote forked so is a zygote like any
other: it serves its job alone, on its own control socket, and ends when that socket closes (its job gone) or when
the template does.
"""
from __future__ import annotations

import contextlib
import gc
import itertools
import json
import os
import select
import socket
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterator

import torch

from grader.sandbox import wire
from grader.sandbox.jail import cgroup, rootfs, uids
from grader.sandbox.jail import confine as sandbox
from grader.sandbox.jail.children import END_SECONDS, Children
from grader.sandbox.jail.confine import SandboxUnavailable, confine, probe
from grader.sandbox.jail.lifeline import die_with_parent, take_environment
from grader.sandbox.jail.syscalls import PR_SET_CHILD_SUBREAPER, prctl
from grader.sandbox.jail.worker import Watch, serve
from grader.sandbox.limits import Limits, process_facts


def start(control_fd: int, settings: dict) -> None:
    """Serve as a zygote on ``control_fd`` (as a template with ``settings["template"]``), the ``settings`` of a
    ``host.zygote.Zygote`` applied (``lifeline``, which set its environment before anything here was imported)."""
    configure(settings)
    hierarchies, cpu_cap = _ready()
    (template_main if settings.get("template") else serve_spawns)(socket.socket(fileno=control_fd), hierarchies,
                                                                  cpu_cap)


def configure(settings: dict) -> None:
    """A zygote's settings: the variables of the grading process it takes on (``host.zygote.PASSED_ON``: the uid its
    workers run as among them), the folders its sandboxes hide besides the grader's, and, for testing the degraded
    path only, no namespaces."""
    take_environment(settings.get("environ", {}))
    uids.from_environment()
    if not settings.get("namespaces", True):  # Zygote(namespaces=False): test the degraded path
        sandbox._probe_result = (False, "namespaces turned off for this zygote (Zygote(namespaces=False))")
    rootfs.HIDDEN_TREES.extend(settings.get("hide", ()))


def _ready() -> tuple[list, str]:
    """Warm up and settle what every worker inherits; the cgroup hierarchies workers are put in, and how their CPU is
    capped."""
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    _warm()
    _close_escapes()
    probe()  # once, here: every worker inherits the answer instead of building a throwaway sandbox of its own
    hierarchies, cpu_cap = cgroup.hierarchies()
    cgroup.sweep(hierarchies)
    gc.freeze()  # a worker's collector never walks, so never copies on write, what was imported here (~25% fewer page faults)
    gc.enable()  # off while torch was imported (lifeline): the workers collect their own garbage
    return hierarchies, cpu_cap


def serve_spawns(control: socket.socket, hierarchies, cpu_cap: str) -> None:
    """Serve spawn/reap requests on a SOCK_SEQPACKET control socket until it closes."""
    children = Children()
    for data, fds in _requests(control, 1, children.sweep):  # the orphans it adopted are reaped while it waits
        request = json.loads(data)
        if request["op"] == "spawn":
            paths, worker_cap = _make_cgroup(hierarchies, cpu_cap, request)
            zygote = os.getpid()
            pid = os.fork()
            if pid == 0:
                control.close()
                _run_worker(fds[0], request, zygote, paths, worker_cap)
            children.forked(pid, paths)
            os.close(fds[0])
            control.send(json.dumps({"pid": pid}).encode())
        elif request["op"] == "stop":
            status = children.stop(request["pid"], float(request["grace"]), float(request["teardown"]), request["unconfined"])
            control.send(json.dumps({"status": status}).encode())
    children.end()  # they would die with the zygote anyway: this way they leave no orphan, and no cgroup


def _requests(control: socket.socket, most_fds: int, between: Callable[[], object]) -> Iterator[tuple[bytes, list]]:
    """The requests on a SOCK_SEQPACKET control socket, each its data and file descriptors, until it closes;
    ``between()`` runs before each wait, and once a second while none comes."""
    readable = select.poll()
    readable.register(control, select.POLLIN)
    while True:
        between()
        if not readable.poll(1000):
            continue
        try:
            data, fds, _, _ = socket.recv_fds(control, 65536, most_fds)
        except OSError:
            return
        if not data:
            return
        yield data, fds


def template_main(control: socket.socket, hierarchies, cpu_cap: str) -> None:
    """Fork a zygote for each clone request (its settings; its control socket and its standard error as file
    descriptors) and answer its pid, with a pidfd of it (the asker is not its parent), or why it could not: until the
    control socket closes. The template is the subreaper of what its zygotes leave, reaps it, and removes the cgroups
    of a zygote that ended without removing them."""
    with contextlib.suppress(OSError):
        prctl(PR_SET_CHILD_SUBREAPER, 1)

    def reap():
        if _reap_all()[1]:
            cgroup.sweep(hierarchies)
    for data, fds in _requests(control, 2, reap):
        answer, pidfd = {}, None
        try:
            settings = json.loads(data)
            answer["nonce"] = settings.get("nonce")
            if len(fds) != 2:
                raise ValueError("a clone request sends its control socket and its standard error")
            answer["pid"] = _clone(control, settings, fds, hierarchies, cpu_cap)
            pidfd = os.pidfd_open(answer["pid"])
        except Exception as error:  # noqa: BLE001 - one request's failure (fork: EAGAIN, ENOMEM) is said to its asker
            answer = {"nonce": answer.get("nonce"), "error": f"{type(error).__name__}: {error}"[:300]}
        finally:
            for fd in fds:
                os.close(fd)
        try:
            socket.send_fds(control, [json.dumps(answer).encode()], [pidfd] if pidfd is not None else [])
        except OSError:  # the batch is gone
            break
        finally:
            if pidfd is not None:
                os.close(pidfd)
    deadline = time.monotonic() + END_SECONDS  # its zygotes, whose askers are gone, are ending: they clean up first
    while not _reap_all()[0] and time.monotonic() < deadline:
        time.sleep(0.05)


def _clone(control: socket.socket, settings: dict, fds: list[int], hierarchies, cpu_cap: str) -> int:
    """Fork a zygote serving ``fds[0]`` with ``fds[1]`` as its standard error and ``settings`` applied; its pid."""
    template = os.getpid()
    pid = os.fork()
    if pid == 0:  # the new zygote: whatever happens, it never comes back into the template's loop
        code = 70
        try:
            control.close()
            os.dup2(fds[1], 2)
            die_with_parent(template)
            configure(settings)
            serve_spawns(socket.socket(fileno=fds[0]), hierarchies, cpu_cap)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    return pid


def _reap_all() -> tuple[bool, bool]:
    """Reap every child of the template that has exited (its zygotes, and what they left): whether none is left, and
    whether any was reaped."""
    reaped = False
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            reaped = True
    except ChildProcessError:
        return True, reaped
    return False, reaped


_cgroup_numbers = itertools.count(1)


def _make_cgroup(hierarchies, cpu_cap: str, request: dict) -> tuple[list[str], str]:
    """A new worker's cgroup (its directories) and how its CPU is capped ("none: <why>" when it is not)."""
    if not hierarchies:
        return [], cpu_cap
    try:
        return cgroup.create(hierarchies, f"grader-{os.getpid()}-{next(_cgroup_numbers)}", int(request["limits"]["processes"])), cpu_cap
    except OSError as error:
        return [], f"none: the worker's cgroup could not be made ({error.strerror or error})"


def _warm() -> None:
    """Do once, before forking, what every worker would otherwise pay for on its first call: torch's lazy
    imports and initialisation (a non-scalar backward, the meta device's kernels, ...).

    Nothing here may start CUDA: a worker forked from a zygote that did cannot start it ("CUDA error: initialization
    error", seen on an H200). The autograd engine's first backward counts every device type's devices, which on a
    CUDA build of torch starts CUDA's driver, so the backward is warmed only on a build without CUDA."""
    _without_dynamo()
    names = frozenset({"_softmax", "matmul"})
    x = torch.randn(2, 3, 4, requires_grad=True)
    layer, dropout = torch.nn.Linear(4, 4), torch.nn.Dropout(0.1)
    with Watch(names):
        logits = (layer(x) @ x.transpose(-2, -1)).masked_fill(torch.ones(3, 3, dtype=torch.bool).tril() == 0, float("-inf"))
        out = dropout(torch.softmax(logits / 2.0, dim=-1)) @ x
        if torch.version.cuda is None:
            out.backward(torch.ones_like(out))
        torch.softmax(torch.empty(2, 3, device="meta") @ torch.empty(3, 2, device="meta") / 2.0, dim=-1)
        torch.einsum("ij,jk->ik", torch.randn(2, 3), torch.randn(3, 2)).sum().item()


class _Refused:
    """What torch.DisableTorchFunction is in a worker: it raises, saying why."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("torch.DisableTorchFunction is not available while grading: it hides your code's calls from "
                           "the checks")


def _close_escapes() -> None:
    """torch.DisableTorchFunction (torch._C's, the same) turns off every torch function mode, the checks' watch of
    the calls included (red team 17, review 11): in a worker it raises (``_Refused``), besides the import rule's
    refusing it where the source names it. Nothing of torch that a grade uses needs it."""
    torch.DisableTorchFunction = torch._C.DisableTorchFunction = _Refused


def _without_dynamo() -> None:
    """Torch wraps its Python kernels (the meta device's elementwise operations among them) so that torch.compile
    does not trace into them, and the wrapper imports ``torch._dynamo`` (~800 modules, 0.7 to 0.9 s) on its first
    call, only to build that exclusion. Nothing compiles here: every wrapper that exists is marked done, with the
    kernel itself as what it calls, so the import never happens for the kernels a grade uses (the warm-up and
    ``test_a_worker_never_imports_what_torch_imports_lazily`` check it). Should torch's wrapper change shape, nothing
    is marked and ``_warm`` imports ``torch._dynamo`` as before. A submission that imports a module which imports
    ``torch._dynamo`` itself (``torch.nn.attention.bias``) pays for it, within its time limits."""
    inner = torch._disable_dynamo(lambda: None).__code__
    if "fn" not in inner.co_freevars:
        return
    at = inner.co_freevars.index("fn")
    for obj in gc.get_objects():
        if type(obj) is types.FunctionType and obj.__code__ is inner:
            with contextlib.suppress(Exception):  # a kernel that cannot be marked stays as it was
                kernel = obj.__closure__[at].cell_contents
                if getattr(kernel, "__dynamo_disable", None) is None:
                    kernel.__dynamo_disable = kernel


def _run_worker(fd: int, request: dict, zygote: int, cgroup_paths: list[str], cpu_cap: str) -> None:
    """In the child forked from ``zygote`` (its pid): silence output, enter its cgroup and the sandbox, serve;
    never returns."""
    code = 0
    try:
        die_with_parent(zygote)
        try:  # before the sandbox: the supervisor, the worker and all they fork share the cgroup's one CPU
            cgroup.join(cgroup_paths)
        except OSError as error:
            cpu_cap = f"none: the worker's cgroup could not be entered ({error.strerror or error})"
        devnull = os.open(os.devnull, os.O_RDWR)
        for target in (0, 1, 2):
            os.dup2(devnull, target)
        os.close(devnull)
        try:
            isolation = confine(request["submission"], Limits(**request["limits"]), require=request["require_sandbox"],
                                expose_cuda=request["device"] == "cuda", keep_fds=[fd])
            if request["device"] == "cuda":
                _start_cuda()
        except (SandboxUnavailable, RuntimeError) as error:  # no student code has run: tell the grader why, then stop
            what = "the sandbox could not be set up" if isinstance(error, SandboxUnavailable) else "CUDA did not start"
            socket.socket(fileno=fd).sendall(wire.encode({"ok": False, "failure": {"kind": "sandbox", "message": f"{what}: {error}"}}))
            raise
        serve(socket.socket(fileno=fd), isolation, cpu_cap, request["device"], request["watch"])
    except BaseException:
        code = 70
    os._exit(code)


def _start_cuda() -> None:
    """Start, before any student code, all of CUDA that grading uses: the driver and its state, cuBLAS, and the
    autograd engine's thread for the GPU (started by the first backward). Whatever fails here (no driver or device, a
    CPU build of torch: AssertionError, no thread to be had) is the grader's fault, raised as RuntimeError; in the
    student's first call it would have been reported as their code raising."""
    try:
        x = torch.ones(2, 2, device="cuda", requires_grad=True)
        x.matmul(x).sum().backward()
        torch.cuda.synchronize()
    except Exception as error:
        raise RuntimeError(f"{type(error).__name__}: {error} ({process_facts()})") from error


