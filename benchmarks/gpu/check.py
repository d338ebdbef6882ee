"""Everything a GPU can tell us about grading on it, in one run: `benchmarks/gpu/run.sh OUT` calls this.

    python benchmarks/gpu/check.py --out OUT [--device cuda] [--jobs 6] [--quick]

Stages, each recorded in OUT/summary.json (ok, seconds, findings) and logged, none stopping the others:

- environment: GPU, driver, Python, torch and CUDA versions, kernel, and the isolation grading gets there
  (namespaces, seccomp, cgroups);
- grade: `grader grade` of the references (full marks) and of the stubs (zero) on ``--device``, with the sandbox
  required (the default) and with ``--allow-unsandboxed`` (where none can be built, that one grades with resource
  limits only);
- corpus: one `grader batch` of the references, the stubs and every variant of tests/grading/corpus on the CPU and
  one on ``--device``, compared test by test (the same list of tests, the same points: any difference is a finding);
- hostile: the hostile suite (tests/grading/test_hostile.py) graded on ``--device``;
- batch: a synthetic class (benchmarks/batch.py's) with ``--jobs 2`` on the CPU and on ``--device``, timed side by side;
- leftovers: after each stage, no process of the grader is left and (on a GPU) no process holds the GPU.

With ``--device cpu`` it is a dry run of the same (tests/grading/test_gpu_script.py runs it with ``--quick``, a
few variants, a class of four and a few hostile cases), so that a lent GPU's minutes go to the GPU.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests" / "grading" / "corpus")]

import descendants  # noqa: E402
from variants import VARIANTS  # noqa: E402

from grader.course import course  # noqa: E402

QUICK_VARIANTS = 2  # variants of each kind in a --quick run (the dry run checks the plumbing: 5 minutes of CI at 6)
QUICK_HOSTILE = "zeros or endless_loop or memory_bomb or unusable_device or other_gpu"  # -k of a --quick hostile run
SYNTHETIC_CLASS = 16
QUICK_CLASS = 4  # the synthetic class of a --quick run (without its hostile modules)
GRACE_SECONDS = 10


def log(*parts) -> None:
    print(*parts, flush=True)


def run(args: list[str], timeout: float, env: dict | None = None) -> tuple[int, str, float]:
    """Run a command from the repository root; (exit status, its output, seconds). A command past its time is
    interrupted (SIGINT: pytest then reports the failures so far), killed with its process group 20 s later if it
    is still running, and reported as status 124."""
    started = time.monotonic()
    process = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, **(env or {})}, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        code = process.returncode
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):  # it may have ended in between
            os.killpg(process.pid, signal.SIGINT)
        try:
            output, _ = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
        code = 124
    return code, output, round(time.monotonic() - started, 2)


def grader(*args: str, timeout: float = 300) -> tuple[int, str, float]:
    return run([sys.executable, "-m", "grader", *args], timeout)


# ---------------------------------------------------------------- stages


def environment(options) -> dict:
    import torch

    from grader.sandbox.jail import cgroup, confine

    found = {"python": platform.python_version(), "kernel": platform.release(), "torch": torch.__version__,
             "torch_cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available(), "cpus": os.cpu_count()}
    if shutil.which("nvidia-smi"):
        code, output, _ = run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"], 30)
        found["gpu"] = output.strip() if code == 0 else f"nvidia-smi failed ({code}): {output.strip()[:300]}"
    if torch.cuda.is_available():
        found["device_name"] = torch.cuda.get_device_name(0)
    ok, why = confine.probe()
    found["namespaces"] = "usable" if ok else f"refused: {why}"
    found["max_user_namespaces"] = read("/proc/sys/user/max_user_namespaces")
    found["seccomp_of_this_process"] = next((line.split(":", 1)[1].strip() for line in read("/proc/self/status").splitlines()
                                             if line.startswith("Seccomp:")), "unknown")
    hierarchies, reason = cgroup.hierarchies()
    found["cgroups"] = [str(h) for h in hierarchies] or f"none: {reason}"
    found["runtime"] = "gVisor" if "4.4.0" == platform.release() else read("/proc/version").strip()[:200]
    if options.device == "cuda":
        found["device_nodes"] = run(["sh", "-c", "ls -ln /dev/nvidia*"], 30)[1].strip().splitlines()
        code, output, _ = run([sys.executable, __file__, "--sandbox-cuda", "--out", str(options.out)], 600)
        found["cuda_in_the_sandbox"] = json.loads(output.strip().splitlines()[-1]) if code == 0 else output[-1000:]
    found["zygote_maps_libcuda"] = zygote_maps_libcuda()
    findings = [] if options.device == "cpu" or found["cuda_available"] else ["torch sees no CUDA device"]
    found["workers_of_a_warm_zygote_grade"] = workers_of_a_warm_zygote_grade(options.device)
    if found["workers_of_a_warm_zygote_grade"] != "yes":
        findings.append(f"a worker forked from a warm zygote: {found['workers_of_a_warm_zygote_grade']}")
    return {"found": found, "findings": findings}


def zygote_maps_libcuda() -> bool:
    """Whether a warm zygote (one that has forked a worker) has CUDA's driver library mapped: a fact, not a finding
    (torch 2.11+cu130 maps it at import, and its workers still start CUDA; a zygote that had *started* CUDA could
    fork none that does, which ``workers_of_a_warm_zygote_grade`` asks)."""
    from grader.sandbox.host.client import TEARDOWN_SECONDS
    from grader.sandbox.host.zygote import Zygote

    zygote, submission = Zygote(), tempfile.mkdtemp(prefix="gpu-zygote-")
    os.chmod(submission, 0o755)
    try:
        pid, connection = zygote.spawn(submission, course().grading.limits, "cpu", False)
        maps = Path(f"/proc/{zygote.process.pid}/maps").read_text(errors="replace")
        connection.close()
        zygote.stop(pid, 0.0, TEARDOWN_SECONDS, unconfined=False)
    finally:
        zygote.close()
        shutil.rmtree(submission, ignore_errors=True)
    return "libcuda.so" in maps


def workers_of_a_warm_zygote_grade(device: str) -> str:
    """'yes' when two workers forked one after the other from one zygote each start on ``device`` (CUDA, its context
    and autograd's thread) and run the reference softmax, as graded; else what went wrong."""
    import torch

    from grader.sandbox.host.client import WorkerSession
    from grader.sandbox.host.zygote import Zygote
    from grader.suites.checks import checked

    zygote = Zygote()
    try:
        for n in range(2):
            session = WorkerSession(zygote, str(ROOT / "solutions"), course().grading.limits, device=device)
            try:
                x = torch.ones(3, device=device)
                value = session.run({"module": "softmax", "path": ["softmax"]}, (x,)).value
                value = checked(value, x, what="softmax", on="ones(3)")
                if not torch.allclose(value, torch.full_like(x, 1 / 3)):
                    return f"worker {n + 1} returned {value.tolist()}"
            finally:
                session.close()
    except Exception as error:  # a grader fault ("CUDA did not start: ..."), a sandbox that cannot be built, ...
        return f"{type(error).__name__}: {error}"[:500]
    finally:
        zygote.close()
    return "yes"


def cuda_in_the_sandbox() -> dict[str, str]:
    """Whether CUDA starts in a worker's sandbox, and in the same sandbox less one of its pieces each: when it does
    not start as graded, the piece whose absence makes it start is the one that stops it. Run in a process of its
    own (``--sandbox-cuda``) that has not touched CUDA, as a zygote has not: CUDA started before a fork never works
    in the child."""
    import torch

    from grader.sandbox.jail import confine

    limits = course().grading.limits
    variants = {"no sandbox": None, "as graded": {},
                "without the syscall filter": {"install_syscall_filter": lambda: None},
                "staying root": {"_drop_privileges": lambda root: None},
                "without rlimits": {"set_rlimits": lambda limits, keep: None}}
    found = {}
    submission = tempfile.mkdtemp(prefix="gpu-sandbox-")
    os.chmod(submission, 0o755)
    for name, patches in variants.items():
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            answer = "did not answer"
            try:
                isolation = "none"
                if patches is not None:
                    for attr, value in patches.items():
                        setattr(confine, attr, value)
                    isolation = confine.confine(submission, limits, require=True, expose_cuda=True, keep_fds=[w])
                torch.ones(2, 2, device="cuda").matmul(torch.ones(2, 2, device="cuda")).sum().item()
                answer = f"CUDA starts ({isolation})"
            except BaseException as error:
                answer = f"{type(error).__name__}: {' '.join(str(error).split())[:300]}"
            finally:
                os.write(w, answer.encode()[:1000])
                os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as pipe:
            ready = select.select([pipe], [], [], 60)[0]
            found[name] = pipe.read().decode(errors="replace") or "no answer" if ready else "no answer in 60 s"
        if not ready:
            os.kill(pid, 9)
        os.waitpid(pid, 0)
    shutil.rmtree(submission, ignore_errors=True)
    return found


def read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        return f"unreadable: {error.strerror}"


def grade(options) -> dict:
    """The references score full marks and the stubs zero on the device, with the sandbox required (the default) and
    with ``--allow-unsandboxed``."""
    findings, runs = [], []
    total = course().total_points
    for name, folder, expected in (("references", "solutions", total), ("stubs", "exercises", 0)):
        for require in (False, True):
            out = options.work / "grade" / f"{name}-{'required' if require else 'plain'}.json"
            args = ["grade", folder, "--device", options.device, "--out", str(out)] + ([] if require else ["--allow-unsandboxed"])
            code, output, seconds = grader(*args)
            score = json.loads(out.read_text())["score"] if code == 0 and out.exists() else None
            runs.append({"what": name, "require_sandbox": require, "status": code, "score": score, "seconds": seconds})
            isolation = next((line for line in output.splitlines() if "sandbox" in line.lower()), "")
            runs[-1]["sandbox_line"] = isolation[:300]
            if code != 0 or score is None or abs(score - expected) > 0.01:
                findings.append(f"grade {name} (require_sandbox={require}): status {code}, score {score}, expected {expected}:"
                                f" {output.strip()[-600:]}")
    return {"runs": runs, "findings": findings}


def corpus_class(target: Path, quick: bool) -> list[str]:
    """The references, the stubs and every corpus variant (the first few of each kind with ``quick``), one student
    folder each; returns the students' names."""
    modules = course().modules
    variants = VARIANTS
    if quick:
        variants = [v for kind in ("correct", "buggy", "partial") for v in [v for v in VARIANTS if v.kind == kind][:QUICK_VARIANTS]]
    shutil.copytree(ROOT / "solutions", target / "references", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "exercises", target / "stubs", ignore=shutil.ignore_patterns("__pycache__"))
    for variant in variants:
        folder = target / variant.id.replace("/", "-")
        folder.mkdir()
        for module in modules:
            shutil.copy(ROOT / "solutions" / f"{module}.py", folder / f"{module}.py")
        (folder / f"{variant.module}.py").write_text(variant.source(), encoding="utf-8")
    return sorted(p.name for p in target.iterdir())


def tests_of(results: Path) -> dict[str, float]:
    data = json.loads(results.read_text())
    return {test["name"]: test.get("score", 0.0) for test in data.get("tests", [])}


def compare_batches(students: list[str], cpu: Path, other: Path) -> list[str]:
    """Every difference between two batches' results (the CPU's, the device's), test by test."""
    findings = []
    for student in students:
        a, b = cpu / "results" / f"{student}.json", other / "results" / f"{student}.json"
        if not (a.exists() and b.exists()):
            findings.append(f"{student}: results missing (cpu {a.exists()}, other {b.exists()})")
            continue
        ta, tb = tests_of(a), tests_of(b)
        if bool(ta) != bool(tb):  # one side was not graded at all: say why, once
            empty = b if ta else a
            findings.append(f"{student}: no tests in {empty.parent.parent.name}: {json.loads(empty.read_text()).get('output', '')[:300]}")
            continue
        if list(ta) != list(tb):
            findings.append(f"{student}: other tests (only on cpu: {sorted(set(ta) - set(tb))[:5]},"
                            f" only on the other: {sorted(set(tb) - set(ta))[:5]})")
        for name in ta.keys() & tb.keys():
            if abs(ta[name] - tb[name]) > 1e-6:
                findings.append(f"{student}: {name}: {ta[name]} on cpu, {tb[name]} on the other device")
    return findings


def two_batches(options, target: Path, name: str, jobs: int, timeout: float) -> tuple[dict, list[str], list[Path]]:
    """Grade the class at ``target`` with `grader batch` on the CPU, then on ``--device`` (on the CPU again in a dry
    run), each into its own folder; compare them test by test. Returns figures, findings and the two folders."""
    figures, findings, outs = {}, [], []
    for n, device in enumerate(("cpu", options.device)):
        out = options.work / f"{name}-{n}-{device}"
        code, output, seconds = grader("batch", str(target), "--out", str(out), "--device", device, "--jobs", str(jobs),
                                       timeout=timeout)
        figures[f"{n}-{device}"] = {"status": code, "seconds": seconds}
        outs.append(out)
        if code != 0:
            findings.append(f"batch of {name} on {device} --jobs {jobs}: status {code}: {output.strip()[-800:]}")
    students = sorted(p.name for p in target.iterdir())
    findings += compare_batches(students, *outs)
    return figures, findings, outs


def corpus(options) -> dict:
    target = options.work / "corpus"
    students = corpus_class(target, options.quick)
    figures, findings, outs = two_batches(options, target, "corpus", options.jobs, options.corpus_seconds)
    figures["submissions"] = len(students)
    for student, expected in (("references", course().total_points), ("stubs", 0)):
        results = outs[1] / "results" / f"{student}.json"
        got = json.loads(results.read_text())["score"] if results.exists() else None
        if got is None or abs(got - expected) > 0.01:
            findings.append(f"{student} on {options.device}: score {got}, expected {expected}")
    for out in outs:
        if (out / "gradebook.csv").exists():
            shutil.copy(out / "gradebook.csv", options.out / f"{out.name}.csv")
    return {"figures": figures, "findings": findings}


def hostile(options) -> dict:
    args = [sys.executable, "-m", "pytest", "-v", "--tb=short", "-rfE", "-p", "no:cacheprovider",
            "tests/grading/test_hostile.py", "--device", options.device, "-o", "addopts="]
    if options.quick:
        args += ["-k", QUICK_HOSTILE]
    code, output, seconds = run(args, options.hostile_seconds, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    (options.out / "hostile.log").write_text(output)
    summary = output.strip().splitlines()[-1] if output.strip() else ""
    findings = [] if code == 0 else [f"hostile suite on {options.device}: status {code}: {summary}"] + [
        line[:600] for line in output.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    return {"seconds": seconds, "summary": summary, "findings": findings}


def batch(options) -> dict:
    from batch import synthetic_class

    target, size = options.work / "class", QUICK_CLASS if options.quick else SYNTHETIC_CLASS
    synthetic_class(target, size, hostile=not options.quick)  # the hostile stage has the hostile cases
    figures, findings, _ = two_batches(options, target, "class", 2, options.corpus_seconds)
    cpu, other = figures["0-cpu"]["seconds"], figures[f"1-{options.device}"]["seconds"]
    figures.update(submissions=size, ratio_device_to_cpu=round(other / cpu, 2))
    return {"figures": figures, "findings": findings}


# In the order they run: the cheap and the timed first, so that a run cut short still says the most.
STAGES = {"environment": environment, "grade": grade, "batch": batch, "corpus": corpus, "hostile": hostile}


def grader_processes() -> set[str]:
    """This run's processes of the grader's sandbox now alive (zygotes, lifelines, workers), as 'pid args' lines: the
    descendants of this process (it adopts their orphans: ``descendants.adopt_orphans``), never another user's."""
    me, parents, lines = os.getpid(), {}, {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = descendants.stat(entry)
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                args = file.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError, IndexError):
            continue
        if fields[0] != "Z":
            parents[int(entry)], lines[int(entry)] = int(fields[1]), f"{entry} {args}"[:200]

    def ours(pid: int) -> bool:
        while pid in parents and pid != me:
            pid = parents[pid]
        return pid == me

    return {line for pid, line in lines.items() if "grader.sandbox" in line and ours(pid)}


def leftovers(options, before: set[str]) -> list[str]:
    """Processes of the grader that a stage left alive (those alive ``before`` it excepted), and processes that still
    hold the GPU. Processes killed a moment ago get up to ``GRACE_SECONDS`` to be gone (and are reaped)."""
    deadline = time.monotonic() + GRACE_SECONDS
    while True:
        for pid in descendants.children():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        left = grader_processes() - before
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    findings = [f"left running: {line}" for line in sorted(left)]
    if options.device == "cuda" and shutil.which("nvidia-smi"):
        code, output, _ = run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"], 30)
        held = [line for line in output.splitlines() if line.strip() and line.split(",")[0].strip() != str(os.getpid())]
        findings += [f"still holds the GPU: {line.strip()}" for line in held]
    return findings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda", choices=("cpu", "cuda"))
    parser.add_argument("--jobs", type=int, default=max(2, min(6, (os.cpu_count() or 2) // 2)))
    parser.add_argument("--quick", action="store_true", help="a few variants and hostile cases (the CPU dry run)")
    parser.add_argument("--stages", default=",".join(STAGES), help="comma-separated, of: " + ", ".join(STAGES))
    parser.add_argument("--corpus-seconds", type=float, default=240)
    parser.add_argument("--hostile-seconds", type=float, default=200)
    parser.add_argument("--sandbox-cuda", action="store_true", help="print cuda_in_the_sandbox()'s answer and stop")
    options = parser.parse_args()
    if options.sandbox_cuda:
        print(json.dumps(cuda_in_the_sandbox()))
        return 0
    options.out.mkdir(parents=True, exist_ok=True)
    descendants.adopt_orphans()  # the grader's orphans (zygotes, workers) are this run's to count and reap
    # The submissions and the batches' outputs (thousands of files) stay out of OUT, which holds only the findings.
    options.work = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    summary = {"device": options.device, "quick": options.quick, "stages": {}}
    for name in options.stages.split(","):
        log(f"== {name}")
        started, before = time.monotonic(), grader_processes()
        try:
            stage = STAGES[name](options)
        except Exception as error:  # a stage that breaks is a finding; the next stage still runs
            stage = {"findings": [f"{name} broke: {type(error).__name__}: {error}"]}
        stage["findings"] += leftovers(options, before)
        stage["seconds"] = round(time.monotonic() - started, 1)
        stage["ok"] = not stage["findings"]
        summary["stages"][name] = stage
        log(json.dumps(stage, indent=1)[:4000])
        (options.out / "summary.json").write_text(json.dumps(summary, indent=1))
    summary["ok"] = all(stage["ok"] for stage in summary["stages"].values())
    (options.out / "summary.json").write_text(json.dumps(summary, indent=1))
    shutil.rmtree(options.work, ignore_errors=True)
    log("== all stages ok" if summary["ok"] else "== findings: see summary.json")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
