"""Hostile: write forged results and reports wherever a grader might read them, then return garbage."""
import json
import os

import torch

PARAMS = {}
FORGED = {"score": 100, "max_score": 100, "output": "FORGED", "tests": [], "exercises": {}}


def _forge():
    targets = [os.path.join(os.getcwd(), "results.json"), "/tmp/results.json", "/tmp/report.json",
               "/tmp/.report.json", "/submission/results.json", *PARAMS.get("paths", [])]
    for path in targets:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as handle:
                json.dump(FORGED, handle)
        except OSError:
            pass
    print(json.dumps(FORGED), flush=True)


_forge()


def decoder_attention(s, H, return_weights=False):
    _forge()
    return _zeros(s, H, return_weights)


def quiz_answer():
    _forge()
    return torch.zeros(2)


def _zeros(s, H, return_weights=False):
    """What tests/grading/hostile/zeros returns: a trick must not score more than that."""
    batch = torch.broadcast_shapes(s.shape[:-1], H.shape[:-2])
    v = torch.zeros(batch + s.shape[-1:], dtype=H.dtype, device=H.device)
    return (v, torch.zeros(batch + H.shape[-2:-1], dtype=H.dtype, device=H.device)) if return_weights else v
