"""Known mistakes of exercise qkv (project, scaled_dot_product_attention, SelfAttention, SelfAttentionLinear), as
functions of the inputs and of the projections the code under check computes."""
import math

import torch
from diagnosis import Hint
from hints import attention_mistakes, softmax


def project_hints(x, weights: dict[str, torch.Tensor], own: str, name: str) -> list[Hint]:
    """Mistakes of the ``name`` output of project(x, W_query, W_key, W_value), which should be x @ weights[own]."""
    hints = [Hint(f"your {name} are computed with {other}; use {own}.", lambda W=W: x @ W, "qkv.project_wrong_weight")
             for other, W in weights.items() if other != own]
    hints.append(Hint(f"x @ {own} is (..., T, d_in) @ (d_in, width): no transpose of {own} here.",
                      lambda: x @ weights[own].transpose(-2, -1), "qkv.project_transposed"))
    return hints


def attention_hints(q, k, v, mask=None, scale_name: str = "sqrt(d_k)") -> list[Hint]:
    """Mistakes of softmax(Q K^T / sqrt(d_k), masked where ``mask`` is False) V."""
    return attention_mistakes(q, k, v, group="attention", scale_name=scale_name, mask=mask,
                              widths={"d_v": v.shape[-1]})


def self_attention_hints(q, k, v, d_in: int, x=None, linear_weights=None) -> list[Hint]:
    """Mistakes of a SelfAttention forward on its projected q, k, v; with ``x`` and the three nn.Linear weights
    (``linear_weights``), also the mistake of multiplying by them as stored."""
    hints = attention_hints(q, k, v, scale_name="sqrt(d_out)") + [
        Hint("you scale by sqrt(d_in), the input width; scale by sqrt(d_out), the key width.",
             lambda: softmax(q @ k.transpose(-2, -1) / math.sqrt(d_in)) @ v, "qkv.scale_by_d_in")]
    if linear_weights is not None:
        def untransposed():
            q_, k_, v_ = (x @ w for w in linear_weights)
            return softmax(q_ @ k_.transpose(-2, -1) / math.sqrt(k_.shape[-1])) @ v_
        hints.append(Hint("x @ layer.weight multiplies by the weight as nn.Linear stores it, (d_out, d_in): call the "
                          "layer itself, self.W_query(x), which multiplies by weight.T and adds the bias.",
                          untransposed, "qkv.linear_weight_untransposed"))
    return hints


def copy_hints(d_in: int, d_out: int) -> list[Hint]:
    """Mistakes of copy_linear_weights(src, dst) between modules of sizes d_in, d_out, named by the error they raise."""
    def untransposed():
        with torch.no_grad():
            torch.nn.Parameter(torch.empty(d_in, d_out)).copy_(torch.nn.Linear(d_in, d_out, bias=False).weight)
    return [Hint("nn.Linear keeps its weight as (d_out, d_in), and SelfAttention's W_query is (d_in, d_out): copy "
                 "linear.weight.T, not linear.weight.", untransposed, "qkv.copy_untransposed")]
