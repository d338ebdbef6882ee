"""The handout's GitHub Actions workflow, run as GitHub runs it, on a submission that plants code wherever Python, pip,
pytest or a build tool would pick it up from the checkout: none of it runs, the grader's token shows in no output in
any encoding and stays in no file, and the score is the submission's.

Every ``run:`` step of the released ``.github/workflows/classroom.yml`` runs verbatim (bash, as ``shell: bash`` runs
it; ``if:`` and ``${{ }}`` evaluated; ``working-directory`` honoured; ``$GITHUB_OUTPUT``, ``$GITHUB_STEP_SUMMARY`` and
``$RUNNER_TEMP`` as GitHub gives them), in an environment holding only what a runner gives a step. What GitHub's
machine and network provide is replaced by local equivalents, and nothing else:

* ``actions/setup-python``: this interpreter, as ``python`` on ``PATH``;
* ``actions/checkout`` (``path: submission``): the planted submission copied to ``$GITHUB_WORKSPACE/submission``;
* PyPI and PyTorch's index: none (``PIP_NO_INDEX``); the pinned packages are those installed beside this interpreter,
  which the workflow's environment sees (``--system-site-packages``), and the grader is built without fetching a
  build backend (``PIP_NO_BUILD_ISOLATION``);
* github.com: a local git server (smart HTTP, ``git http-backend``) holding the grader's private repository (this
  project's files) at tag v1, reached through a ``url.insteadOf`` of the runner's global git configuration, which
  refuses any request without the token's ``Authorization`` header;
* the Classroom reporter (an action): not run; its condition and input are checked.

These tests replace tests/grading/test_release.py's run of the steps, which put `python -m grader` of this repository
in place of the installed grader and never ran the install and fetch steps.
"""
from __future__ import annotations

import ast
import base64
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from grader import ROOT
from grader.authoring.release import PYTHON, WORKFLOW, build_handout
from grader.course import course

REPOSITORY = "course-org/attention-grader"
REFERENCES = ("scores", "softmax")  # the submission's finished exercises: the references; the others are stubs
PLANT_RAN = "PLANTED CODE RAN"


# ----------------------------------------------------------------- github.com: a local git server

class _GitHandler(BaseHTTPRequestHandler):
    """Git's smart HTTP protocol through ``git http-backend`` (CGI), for requests that carry the token."""

    def do_GET(self):  # noqa: N802 (http.server's names)
        self._backend()

    def do_POST(self):  # noqa: N802
        self._backend()

    def log_message(self, *args):
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0], 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            self.rfile.readline()
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _backend(self):
        server: GitServer = self.server.owner
        header = self.headers.get("Authorization", "")
        server.authorizations.append(header)
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() != "basic" or credentials != server.credentials:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="github"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path, _, query = self.path.partition("?")
        body = self._body()
        env = {"PATH": os.environ["PATH"], "GIT_PROJECT_ROOT": str(server.root), "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": path, "QUERY_STRING": query, "REQUEST_METHOD": self.command, "REMOTE_ADDR": "127.0.0.1",
               "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
               "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
               "GIT_PROTOCOL": self.headers.get("Git-Protocol", "")}
        reply = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=120).stdout
        head, _, payload = reply.partition(b"\r\n\r\n") if b"\r\n\r\n" in reply else reply.partition(b"\n\n")
        headers = [line.split(b":", 1) for line in head.splitlines() if b":" in line]
        status = next((value.strip().decode() for name, value in headers if name.lower() == b"status"), "200 OK")
        self.send_response(int(status.split()[0]))
        for name, value in headers:
            if name.lower() != b"status":
                self.send_header(name.decode(), value.strip().decode())
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@dataclass
class GitServer:
    """``http://127.0.0.1:PORT/OWNER/NAME.git`` for the bare repositories under ``root``; every request must carry
    ``Authorization: basic base64(x-access-token:TOKEN)``, as GitHub's token does."""

    root: Path
    token: str
    authorizations: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.credentials = base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), _GitHandler)
        self.http.owner = self
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.http.shutdown()
        self.http.server_close()


def grader_repository(root: Path) -> Path:
    """The instructor's private repository: this project's files (those git does not ignore), committed and tagged v1
    in a bare repository ``root/OWNER/NAME.git``."""
    work = root.parent / "grader-work"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True)
    if listed.returncode:  # not a git checkout: the project's folder less what is never committed
        shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", ".*_cache",
                                                                 ".hypothesis", "build", "out", ".whl", "results.json"))
    for name in filter(None, listed.stdout.decode().split("\0") if not listed.returncode else []):
        if (ROOT / name).is_file():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, work / name)
    git = ["git", "-c", "user.name=Instructor", "-c", "user.email=instructor@example.org", "-c", "init.defaultBranch=main"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "The grader"], ["tag", "v1"]):
        subprocess.run([*git, *command], cwd=work, check=True, capture_output=True)
    bare = root / f"{REPOSITORY}.git"
    subprocess.run([*git, "clone", "-q", "--bare", str(work), str(bare)], check=True, capture_output=True)
    return bare


# ----------------------------------------------------------------- the submission and its plants

def _plant(name: str, markers: Path) -> str:
    """Python code that leaves a marker (what it saw) and says so, then stops whatever ran it."""
    return (f"import os, sys\n"
            f"with open(os.path.join({str(markers)!r}, {name!r} + '-' + str(os.getpid())), 'w') as _marker:\n"
            f"    _marker.write(repr({{'token': os.environ.get('GRADER_TOKEN'), 'cwd': os.getcwd(), 'argv': sys.argv,\n"
            f"                         'grader': os.path.exists(os.path.join(os.environ.get('RUNNER_TEMP', '/'), 'grader'))}}))\n"
            f"print({PLANT_RAN + ': ' + name!r}, flush=True)\n"
            f"raise SystemExit({PLANT_RAN + ': ' + name!r})\n")


def plant(checkout: Path, markers: Path) -> None:
    """Code in every place of the checkout that Python, pip, pytest or a build tool started there would run, and
    configuration that would make them run it (or write a file)."""
    files = {
        "pip/__init__.py": "pip", "pip/__main__.py": "pip -m", "torch/__init__.py": "torch",
        "pytest/__init__.py": "pytest", "pytest/__main__.py": "pytest -m", "setuptools/__init__.py": "setuptools",
        "grader/__init__.py": "grader", "grader/__main__.py": "grader -m", "sitecustomize.py": "sitecustomize",
        "usercustomize.py": "usercustomize", "conftest.py": "conftest", "planted_module.py": "a .pth",
        "planted_plugin.py": "a pytest plugin of pytest.ini, setup.cfg or pyproject.toml",
        "planted_backend.py": "a build backend of pyproject.toml", "setup.py": "setup.py", "json.py": "json",
        "__main__.py": "the folder run", "planted_package/setup.py": "a requirement",
        "exercises/conftest.py": "exercises/conftest", "exercises/sitecustomize.py": "exercises/sitecustomize",
        "tests/conftest.py": "tests/conftest",
    }
    for path, name in files.items():
        (checkout / path).parent.mkdir(parents=True, exist_ok=True)
        (checkout / path).write_text(_plant(name, markers))
    pip_conf = f"[global]\nlog = {markers / 'pip.conf was read'}\nfind-links = {checkout / 'planted_package'}\n"
    configuration = {
        "planted.pth": "import planted_module\n",
        "exercises/planted.pth": "import planted_module\n",
        "pytest.ini": "[pytest]\naddopts = -p planted_plugin\n",
        "exercises/pytest.ini": "[pytest]\naddopts = -p planted_plugin\n",
        "setup.cfg": "[tool:pytest]\naddopts = -p planted_plugin\n\n[metadata]\nname = planted\n",
        "pip.conf": pip_conf, ".config/pip/pip.conf": pip_conf, ".pip/pip.conf": pip_conf,
    }
    for path, text in configuration.items():
        (checkout / path).parent.mkdir(parents=True, exist_ok=True)
        (checkout / path).write_text(text)
    with open(checkout / "pyproject.toml", "a") as pyproject:
        pyproject.write('\n[build-system]\nrequires = []\nbuild-backend = "planted_backend"\nbackend-path = ["."]\n')
    with open(checkout / "requirements.txt", "a") as requirements:
        requirements.write("./planted_package\n")


# ----------------------------------------------------------------- the runner

@dataclass
class Step:
    name: str
    ran: bool
    stdout: bytes = b""
    stderr: bytes = b""
    returncode: int = 0


class Runner:
    """One job of the workflow on a fresh "runner": its folders under ``root``, the steps run in order."""

    def __init__(self, root: Path, workflow: dict, submission: Path, token: str, server: GitServer):
        self.root, self.workflow, self.submission, self.token = root, workflow, submission, token
        self.workspace, self.temp, self.home, bin_dir = (root / name for name in ("workspace", "temp", "home", "bin"))
        for folder in (self.workspace, self.temp, self.home, bin_dir):
            folder.mkdir(parents=True)
        (bin_dir / "python").symlink_to(sys.executable)  # actions/setup-python
        (self.home / ".gitconfig").write_text(f'[url "{server.url}"]\n\tinsteadOf = https://github.com/\n')  # github.com
        self.path = f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"
        self.outputs: dict[str, dict[str, str]] = {}
        self.summary = root / "step_summary.md"
        self.steps: list[Step] = []

    def expand(self, text: str) -> str:
        """``${{ ... }}`` replaced as GitHub would (the expressions the workflow uses)."""
        def value(match) -> str:
            name = match[1].strip()
            known = {"secrets.GRADER_TOKEN": self.token, "runner.temp": str(self.temp), "github.token": "a-github-token"}
            if name in known:
                return known[name]
            step = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", name)
            assert step, f"the test does not know the expression {name!r}"
            return self.outputs.get(step[1], {}).get(step[2], "")
        return re.sub(r"\$\{\{(.*?)\}\}", value, str(text))

    def condition(self, expression: str | None) -> bool:
        """An ``if:`` of the workflow (earlier steps all succeeded, so ``always() &&`` changes nothing)."""
        if expression is None:
            return True
        match = re.fullmatch(r"(?:always\(\) && )?steps\.([\w-]+)\.outputs\.([\w-]+) (==|!=) '([^']*)'", expression)
        assert match, f"the test cannot evaluate the condition {expression!r}"
        value = self.outputs.get(match[1], {}).get(match[2], "")
        return (value == match[4]) == (match[3] == "==")

    def run(self) -> list[Step]:
        """Run the job's steps in order until one fails (GitHub then skips the rest: none has ``always()`` alone)."""
        shell = self.workflow.get("defaults", {}).get("run", {}).get("shell")
        # GitHub's command lines: `shell: bash`, and its default where no shell is named
        command = ["bash", "--noprofile", "--norc", "-eo", "pipefail"] if shell == "bash" else ["bash", "-e"]
        for number, step in enumerate(self.workflow["jobs"]["autograding"]["steps"]):
            if self.steps and self.steps[-1].returncode:
                break
            if not self.condition(step.get("if")):
                self.steps.append(Step(step["name"], ran=False))
                continue
            if "uses" in step:
                self.steps.append(self.action(step))
                continue
            env = {"PATH": self.path, "HOME": str(self.home), "LANG": "C.UTF-8", "CI": "true", "GITHUB_ACTIONS": "true",
                   "GITHUB_WORKSPACE": str(self.workspace), "RUNNER_TEMP": str(self.temp),
                   "GITHUB_OUTPUT": str(self.temp / f"output-{number}"), "GITHUB_STEP_SUMMARY": str(self.summary),
                   **{k: self.expand(v) for k, v in self.workflow["env"].items()},
                   **{k: self.expand(v) for k, v in step.get("env", {}).items()},
                   "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0"}  # PyPI and PyTorch's index
            script = self.temp / f"step-{number}.sh"
            script.write_text(step["run"])
            cwd = self.workspace / self.expand(step.get("working-directory", "."))
            run = subprocess.run([*command, str(script)], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                 capture_output=True, timeout=600)
            script.unlink()
            self.steps.append(Step(step["name"], True, run.stdout, run.stderr, run.returncode))
            output = self.temp / f"output-{number}"
            if "id" in step and output.exists():
                self.outputs[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines())
            output.unlink(missing_ok=True)
        return self.steps

    def action(self, step: dict) -> Step:
        """What the action does here (its local equivalent), or nothing (the reporter, checked by the tests)."""
        if step["uses"].startswith("actions/setup-python@"):
            assert step["with"]["python-version"] == PYTHON, step["with"]
        elif step["uses"].startswith("actions/checkout@"):
            shutil.copytree(self.submission, self.workspace / step.get("with", {}).get("path", "."), symlinks=True,
                            dirs_exist_ok=True)
        else:
            assert step["uses"].startswith("classroom-resources/autograding-grading-reporter@"), step["uses"]
            return Step(step["name"], ran=False)
        return Step(step["name"], ran=True)

    def step(self, name: str) -> Step:
        return next(step for step in self.steps if step.name == name)

    def failed(self) -> str:
        """The first step that failed, with the end of its output ('' when none did)."""
        step = next((step for step in self.steps if step.returncode), None)
        return f"{step.name}: {step.stdout[-3000:]!r}\n{step.stderr[-3000:]!r}" if step else ""


def encodings(secret: str) -> dict[str, bytes]:
    """The secret as a leak could show it: plain, reversed, hexadecimal, and base64 at each alignment (what base64 of
    any text holding the secret contains), standard or URL-safe."""
    raw = secret.encode()
    found = {"plain": raw, "reversed": raw[::-1], "hex": raw.hex().encode(), "HEX": raw.hex().upper().encode()}
    for shift, skip in ((0, 0), (1, 2), (2, 3)):
        for kind, encode in (("base64", base64.b64encode), ("urlsafe base64", base64.urlsafe_b64encode)):
            found[f"{kind}, shifted {shift}"] = encode(b"\0" * shift + raw)[skip:-4]
    return found


def holding(secret: str, data: bytes) -> list[str]:
    """The encodings of ``secret`` found in ``data``."""
    return [kind for kind, value in encodings(secret).items() if value in data]


# ----------------------------------------------------------------- the tests

@pytest.fixture(scope="module")
def handout(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("release") / "handout"
    build_handout(root, grader_repository=REPOSITORY, grader_ref="v1")
    return root


@pytest.fixture(scope="module")
def workflow(handout) -> dict:
    return yaml.safe_load((handout / WORKFLOW).read_text())


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Path:
    """The folder of the local git server's repositories, the grader's among them."""
    root = tmp_path_factory.mktemp("github") / "repositories"
    grader_repository(root)
    return root


def submission(handout: Path, folder: Path, markers: Path) -> Path:
    """The student's repository: the handout, the references in two exercises, and the plants."""
    shutil.copytree(handout, folder)
    for module in REFERENCES:
        shutil.copy(ROOT / "solutions" / f"{module}.py", folder / "exercises" / f"{module}.py")
    markers.mkdir()
    plant(folder, markers)
    return folder


def test_the_leak_check_finds_the_token_in_each_encoding():
    """What a planted step printed to get past GitHub's masking (reversed, base64 of a line holding it, hex) is
    found, wherever the token sits in the encoded text."""
    token = "ghs_" + secrets.token_hex(18)
    for prefix in ("", "a", "ab", "token="):
        text = f"{prefix}{token}\n".encode()
        assert holding(token, b"log: " + text) and holding(token, text[::-1])
        assert holding(token, base64.b64encode(text)) and holding(token, base64.urlsafe_b64encode(text))
        assert holding(token, text.hex().encode()) and holding(token, text.hex().upper().encode())
    assert holding(token, b"nothing here " + token[:-1].encode()) == []


def test_plants_run_where_the_checkout_is_the_working_directory(tmp_path, handout):
    """The plants are live: `python -m pip` and `python -m pytest` started in the checkout run them (so that their
    silence below means they were out of reach, not broken)."""
    checkout = submission(handout, tmp_path / "checkout", tmp_path / "markers")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    for module in ("pip", "pytest"):
        run = subprocess.run([sys.executable, "-m", module, "--version"], cwd=checkout, env=env, capture_output=True,
                             text=True, timeout=60)
        assert run.returncode != 0 and f"{PLANT_RAN}: {module}" in run.stdout, run.stdout + run.stderr
    assert {path.name.rsplit("-", 1)[0] for path in (tmp_path / "markers").iterdir()} == {"pip", "pytest"}


@pytest.mark.slow
def test_a_push_is_graded_with_nothing_of_the_checkout_run_and_the_token_nowhere(tmp_path, handout, workflow, served):
    """With the grader's secret: the install, fetch, install, checkout, sandbox and grade steps run; no planted code
    runs; the token reaches the git server and nothing else (no output, no file, no .git/config); the score is the
    submission's; the public checks (student code) do not run."""
    token = "ghs_" + secrets.token_hex(18)
    server = GitServer(served, token)
    markers = tmp_path / "markers"
    checkout = submission(handout, tmp_path / "student", markers)
    try:
        runner = Runner(tmp_path / "runner", workflow, checkout, token, server)
        steps = runner.run()
    finally:
        server.close()

    assert sorted(path.name for path in markers.iterdir()) == [], "planted code ran"
    logs = b"".join(step.stdout + step.stderr for step in steps)
    assert PLANT_RAN.encode() not in logs
    assert not runner.failed(), runner.failed()
    assert [step.name for step in steps if not step.ran] == ["Report the score to GitHub Classroom",
                                                              "Public checks only (no grader secret here)"]

    # the token went to the git server, with every request, and nowhere else
    assert server.authorizations and set(server.authorizations) == {f"basic {server.credentials}"}
    assert runner.outputs["grader"] == {"available": "true"}
    config = (runner.temp / "grader" / ".git" / "config").read_text()
    assert "extraheader" not in config.lower() and "https://github.com/course-org/attention-grader.git" in config
    for step in steps:
        assert not holding(token, step.stdout + step.stderr), step.name
    for path in runner.root.rglob("*"):  # the workspace, the temporary folder (the clone, the venv), home, outputs
        if path.is_file() and not path.is_symlink():
            assert not holding(token, path.read_bytes()), path

    # the grader ran from its own environment, not editable, and graded the submission's content
    installed = subprocess.run([str(runner.temp / "venv" / "bin" / "python"), "-I", "-c",
                                "import grader; print(grader.__file__)"], capture_output=True, text=True, check=True)
    assert installed.stdout.strip().startswith(str(runner.temp / "venv")), installed.stdout
    expected = sum(e.points for e in course().exercises if e.module in REFERENCES)
    grade = runner.step("Grade").stdout.decode()
    assert grade.splitlines()[-1] == f"Score: {expected:g}/{course().total_points:g}", grade[-3000:]
    result = json.loads(base64.b64decode(runner.outputs["autograder"]["result"]))
    assert sum(test["score"] for test in result["tests"]) == expected and result["max_score"] == course().total_points
    assert runner.condition(next(s["if"] for s in workflow["jobs"]["autograding"]["steps"]
                                 if s["name"] == "Report the score to GitHub Classroom"))
    notices = [line for line in grade.splitlines() if line.startswith("::notice")]
    assert len(notices) == len(course().modules) - len(REFERENCES)
    assert all(re.match(r"::notice file=exercises/\w+\.py,line=\d+,", line) for line in notices), notices


@pytest.mark.slow
def test_without_the_secret_only_the_public_checks_run_with_nothing_of_the_grader(tmp_path, handout, workflow, served):
    """Without the secret (a fork): nothing is fetched or graded, and the public checks, which run the student's code
    by design, run last, where no token and no grader are: what the planted code saw says so."""
    server = GitServer(served, "ghs_" + secrets.token_hex(18))
    markers = tmp_path / "markers"
    checkout = submission(handout, tmp_path / "student", markers)
    try:
        runner = Runner(tmp_path / "runner", workflow, checkout, "", server)
        steps = runner.run()
    finally:
        server.close()
    assert not runner.failed(), runner.failed()
    assert server.authorizations == [], "nothing was fetched"
    assert [step.name for step in steps if step.ran] == [
        "Set up Python", "Install PyTorch (CPU build) and pytest", "Fetch the grader", "Check out the submission",
        "Public checks only (no grader secret here)"]
    assert steps[-1].ran, "the public checks come last"
    assert "no score was computed" in runner.summary.read_text()
    seen = [ast.literal_eval(path.read_text()) for path in markers.iterdir()]  # what each plant that ran saw
    assert seen, "the public checks run the student's code (here, the plants) by design"
    assert all(what["token"] is None and what["grader"] is False for what in seen), seen
