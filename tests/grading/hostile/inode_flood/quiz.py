"""Hostile: fill /tmp and /dev/shm with empty files. A tmpfs's `size` bounds its pages of data, not its inodes: each
empty file costs the kernel about 1 KiB that no limit of the worker counts (3 million of them per tmpfs by default
on a 24 GiB machine). quiz_answer() creates up to PARAMS["tries"] files in each and reports how many it could:
"INODES tmp=N shm=M"."""
import os

PARAMS = {}


def _fill(folder):
    made = 0
    try:
        for made in range(PARAMS["tries"]):
            os.close(os.open(f"{folder}/f{made}", os.O_CREAT | os.O_WRONLY, 0o600))
        made = PARAMS["tries"]
    except OSError:
        pass
    return made


def decoder_attention(s, H, return_weights=False):
    raise RuntimeError("INODES")


def quiz_answer():
    raise RuntimeError(f"INODES tmp={_fill('/tmp')} shm={_fill('/dev/shm')}")
