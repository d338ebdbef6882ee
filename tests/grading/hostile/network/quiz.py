"""Hostile: try to reach the network (the test process's loopback listener, an abstract unix socket,
the outside world) and report what worked."""
import socket

PARAMS = {}


def _try():
    reached = []
    for host in ("127.0.0.1", *PARAMS.get("hosts", [])):
        try:
            socket.create_connection((host, PARAMS["port"]), timeout=0.5).close()
            reached.append(f"tcp {host}")
        except OSError:
            pass
    try:
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.sendto(b"hello", ("127.0.0.1", PARAMS["port"]))
        reached.append("udp sendto")
    except OSError:
        pass
    try:
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.connect("\0" + PARAMS["abstract"])
        reached.append("abstract unix")
    except OSError:
        pass
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=0.5).close()
        reached.append("internet")
    except OSError:
        pass
    return reached


def decoder_attention(s, H, return_weights=False):
    raise RuntimeError(f"NET reached={_try()}")


def quiz_answer():
    raise RuntimeError(f"NET reached={_try()}")
