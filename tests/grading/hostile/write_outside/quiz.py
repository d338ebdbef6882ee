"""Hostile: write outside the sandbox (host paths given by the test, the submission, the system) and report
which writes worked."""
import os

PARAMS = {}


def _write():
    wrote = []
    for path in [*PARAMS.get("paths", []), "/submission/quiz.py", "/submission/extra.py", "/usr/evil", "/etc/evil",
                 "/evil", "/proc/sys/kernel/hostname", "/tmp/inside-only", "/dev/shm/inside-only"]:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError:
            pass
        try:
            with open(path, "a") as handle:
                handle.write("hostile\n")
            wrote.append(path)
        except OSError:
            pass
    try:
        os.symlink("/submission", "/tmp/link")
        os.chmod("/submission", 0o777)
        wrote.append("chmod /submission")
    except OSError:
        pass
    return wrote


_write()


def decoder_attention(s, H, return_weights=False):
    raise RuntimeError(f"WROTE {_write()}")


def quiz_answer():
    raise RuntimeError(f"WROTE {_write()}")
