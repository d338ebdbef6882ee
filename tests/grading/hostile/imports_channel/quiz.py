"""Hostile (red team): a right decoder_attention that remembers the hidden inputs it is given, and patches every
``imports_of`` of the grader's modules in the worker so that the imports the rule on imports judges (run after the
values checks) are names spelled from those inputs. With PARAMS {"blind": True} it writes constants instead: the
feedback must be the same either way."""
import sys

import torch

PARAMS = {}
SEEN = []  # the inputs of every call, as the worker received them


def _leak(source):
    if PARAMS.get("blind") or not SEEN:
        return [("leak.v1.v2.v3", 1234), ("leak2.v1", 5678), ("leak3.v1", 9012)]
    out = []
    for s, H in (SEEN[0], SEEN[len(SEEN) // 2], SEEN[-1]):  # three names: three hidden inputs
        digits = [f"v{int(round(abs(x) * 1e4))}" for x in (s[:4] + H[:4])]
        out.append(("leak." + ".".join(digits), int(round(abs(s[0]) * 1e9))))
    return out


for _module in list(sys.modules.values()):  # the worker's own module: its name for imports_of
    if getattr(_module, "__name__", "").startswith("grader") and hasattr(_module, "imports_of"):
        _module.imports_of = _leak


def decoder_attention(s, H, return_weights=False):
    if s.shape[-1] != H.shape[-1] or H.dim() < 2:
        raise ValueError("need s (..., d) and H (..., n, d) with the same d")
    if s.device.type != "meta":
        SEEN.append((s.detach().double().flatten().tolist(), H.detach().double().flatten().tolist()))
    scores = (H * s.unsqueeze(-2)).sum(-1)
    alphas = torch.softmax(scores, dim=-1)
    v = (alphas.unsqueeze(-1) * H).sum(-2)
    return (v, alphas) if return_weights else v


def quiz_answer():
    s = torch.tensor([0.4685, 0.9785])
    H = torch.tensor([[0.5539, 0.7239], [0.4111, 0.3878], [0.2376, 0.1264]])
    return decoder_attention(s, H)
