"""A batch's zygote template: the jobs' zygotes are forked from one interpreter that imported torch, and each is a
zygote like a fresh one (its asker's settings and uid, its own control socket, its end with its asker)."""
import json
import os
import signal
import socket
import tempfile
import time
from pathlib import Path

import pytest
from test_hostile import children_of, parent_of, wait_until

from grader.course import COURSE_FILE, load_course
from grader.grade import grade_submission
from grader.sandbox.host.client import WorkerSession
from grader.sandbox.host.zygote import Cloned, Zygote, ZygoteTemplate

SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions"


@pytest.fixture(scope="module")
def template():
    template = ZygoteTemplate()
    yield template
    template.close()


def _uid_of_workers(zygote: Zygote) -> set[int]:
    """The real uids of every process under ``zygote``'s workers."""
    found = set()
    for pid in children_of(zygote.process.pid):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        found.add(int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1]))
    return found


def test_a_zygote_forked_by_the_template_grades_as_a_fresh_one(template, course):
    """A zygote the template forks is the template's child, not the asker's, and grades the references to full marks
    in the namespace sandbox."""
    zygote = Zygote(hide=(course.root,), template=template)
    try:
        assert isinstance(zygote.process, Cloned) and parent_of(zygote.process.pid) == template.process.pid
        outcome = grade_submission(str(SOLUTIONS), course, zygote=zygote)
        assert outcome.isolation == "namespaces"
        assert outcome.grade.score == pytest.approx(course.total_points)
    finally:
        zygote.close()


def test_its_workers_run_as_the_uid_the_asker_holds(template, course, monkeypatch):
    """Each zygote takes its asker's environment: its workers run as the uid its job leased, not the template's."""
    if os.geteuid() != 0:
        pytest.skip("only root runs workers as other uids")
    leased = int(os.environ["GRADER_SANDBOX_UID"]) + 7
    monkeypatch.setenv("GRADER_SANDBOX_UID", str(leased))
    zygote = Zygote(hide=(course.root,), template=template)
    session = WorkerSession(zygote, str(SOLUTIONS), course.grading.limits, modules=course.modules)
    try:
        session._start()
        assert leased in _uid_of_workers(zygote)
    finally:
        session.close()
        zygote.close()


def test_a_zygote_ends_with_its_asker(template):
    """An asker that dies without a word (its control socket closed by the kernel) leaves no zygote: it ends, and the
    template reaps it."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            zygote = Zygote(template=template)
            os.write(write, str(zygote.process.pid).encode())
        finally:
            os._exit(0)
    os.close(write)
    pid = int(os.read(read, 64))
    os.close(read)
    os.waitpid(child, 0)
    assert wait_until(lambda: parent_of(pid) is None, 10), f"zygote {pid} outlived its asker"


def test_a_reply_left_by_an_asker_that_died_is_not_taken(template):
    """An asker that died waiting leaves its reply on the template's socket: the next asker passes over it (its
    nonce) and gets a zygote of its own."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    socket.send_fds(template.control, [json.dumps({"nonce": "left"}).encode()], [theirs.fileno()])
    theirs.close()
    zygote = Zygote(template=template)
    try:
        ours.close()  # the left zygote's asker is gone: it ends
        assert zygote.alive()
        pid, sock = zygote.spawn(str(SOLUTIONS), load_course(COURSE_FILE).grading.limits, "cpu", False)
        sock.close()
        zygote.stop(pid, 1.0, 5.0, True)
        assert wait_until(lambda: children_of(template.process.pid) == children_of(zygote.process.pid)
                          + [zygote.process.pid], 10)
    finally:
        zygote.close()


def test_without_its_template_a_zygote_starts_afresh(course):
    """A job whose template is gone (its batch ending) starts its own zygote, as without one."""
    template = ZygoteTemplate()
    template.close()
    zygote = Zygote(hide=(course.root,), template=template)
    try:
        assert not isinstance(zygote.process, Cloned)
        pid, sock = zygote.spawn(str(SOLUTIONS), course.grading.limits, "cpu", False)
        sock.close()
        zygote.stop(pid, 1.0, 5.0, True)
    finally:
        zygote.close()


def test_a_request_the_template_cannot_serve_is_answered_and_the_template_goes_on(template):
    """A request the template cannot serve (here: no sockets) is answered with why, and costs no other zygote: the
    template serves the next request (a fork that failed, EAGAIN, once stopped it and every job's zygote)."""
    before = Zygote(template=template)
    try:
        socket.send_fds(template.control, [json.dumps({"nonce": "bad"}).encode()], [])
        data, fds, _, _ = socket.recv_fds(template.control, 65536, 1)
        assert json.loads(data)["error"].startswith("ValueError") and not fds
        after = Zygote(template=template)
        assert isinstance(after.process, Cloned) and before.alive() and after.alive()
        after.close()
    finally:
        before.close()


def test_a_zygote_that_fails_to_start_says_why_in_its_askers_log(template):
    """A forked zygote's errors reach its asker's log, as a fresh zygote's do (a fault then says why)."""
    with tempfile.TemporaryFile() as log:
        process, control = template.clone({"hide": 5}, log)  # not a list of folders: configure raises
        try:
            assert process.wait(10) == 0
            log.seek(0)
            assert b"TypeError" in log.read()
        finally:
            control.close()
            process.release()
            process.release()  # once only: the fd number may be another file's by then


def test_an_asker_that_waits_too_long_starts_its_own_zygote_from_then_on(template, monkeypatch):
    """A template whose lock stays held (by another asker, here this process's) or that does not answer in time costs
    its asker one wait: it starts a fresh zygote, and so do later askers of that process, without waiting again."""
    monkeypatch.setattr(template, "WAIT_SECONDS", 0.2)
    assert template.lock.acquire(1.0)
    try:
        first = Zygote(template=template)
        first.close()
        assert not isinstance(first.process, Cloned) and template.failed_in == os.getpid()
    finally:
        template.lock.release()
    second = Zygote(template=template)  # the lock is free, but this process no longer asks
    try:
        assert not isinstance(second.process, Cloned)
    finally:
        second.close()
        template.failed_in = None


def test_an_asker_killed_while_asking_holds_up_no_other(template, monkeypatch):
    """Askers in other processes wait for the one that holds the lock, and the lock of an asker killed while it holds
    it is free again (the kernel drops a dead process's record locks): the next asker gets its zygote from the
    template, not a fresh one after a wait."""
    monkeypatch.setattr(template, "WAIT_SECONDS", 10.0)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.write(write, b"held" if template.lock.acquire(1.0) else b"free")
            time.sleep(60)
        finally:
            os._exit(0)
    os.close(write)
    assert os.read(read, 16) == b"held"
    os.close(read)
    assert not template.lock.acquire(0.2)  # held by the child
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    zygote = Zygote(template=template)
    try:
        assert isinstance(zygote.process, Cloned) and template.failed_in is None
    finally:
        zygote.close()
