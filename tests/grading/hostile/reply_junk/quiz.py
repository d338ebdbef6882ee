"""Hostile (red team 15): right values, and every reply the worker sends carries about 4 MiB of JSON that no check
reads (an extra field of slow-to-parse numbers, within the reply's 4 MiB of JSON and 200,000 values): each reply cost
the grading process 0.1 s of parsing, 52 s in all for one submission at full marks. With ``PARAMS["blob"]``, a 60 MiB
tensor rides instead as the value of every call's result that a check decodes and drops (a step that loads a module's
parameters). With ``PARAMS["everywhere"]``, the JSON rides on every frame, its own import's reply included."""
import torch

import grader.sandbox.jail.worker as worker
import grader.sandbox.wire as wire

PARAMS = {}
NUMBER = b"2.4703282292062327e-324"  # subnormal: slow to parse
JUNK = b', "junk": [' + b",".join([NUMBER] * (((4 << 20) - (96 << 10)) // (len(NUMBER) + 1))) + b"]"
PAD = torch.zeros(60 << 20, dtype=torch.uint8)
_frame, _handle = wire.Encoder.frame, worker.Worker.handle


def _junked(self, message):
    out = _frame(self, message)
    body_len, blob_len = wire.HEADER.unpack_from(out)
    if ("replies" not in message and not PARAMS.get("everywhere")) or body_len + len(JUNK) > wire.MAX_BODY_BYTES:
        return out  # only the replies to calls (a start's, an import's are held to 64 KiB; calls sent ahead to 4 MiB)
    body = out[wire.HEADER.size:wire.HEADER.size + body_len][:-1] + JUNK + b"}"
    return wire.HEADER.pack(len(body), blob_len) + body + out[wire.HEADER.size + body_len:]


def _padded(self, message, blob, earlier=None):
    reply = _handle(self, message, blob, earlier)
    if message.get("op") == "batch" and reply.get("ok"):
        for request, item in zip(message["requests"], reply["replies"]):
            if request.get("op") == "load_params" and item.get("ok"):
                item["value"] = PAD
                break
    return reply


if PARAMS.get("blob"):
    worker.Worker.handle = _padded
else:
    wire.Encoder.frame = _junked


def decoder_attention(s, H, return_weights=False):
    alphas = torch.softmax((H * s.unsqueeze(-2)).sum(-1), dim=-1)
    v = (alphas.unsqueeze(-1) * H).sum(-2)
    return (v, alphas) if return_weights else v


def quiz_answer():
    return decoder_attention(torch.tensor([0.4685, 0.9785]),
                             torch.tensor([[0.5539, 0.7239], [0.4111, 0.3878], [0.2376, 0.1264]]))
