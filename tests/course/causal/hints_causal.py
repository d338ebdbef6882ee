"""Known mistakes of exercise causal (causal_mask, CausalAttention), as functions of what the module computes: its
projected queries, keys and values, and the configuration the contract gives (d_in, context_length)."""
import torch
from diagnosis import Hint
from hints import ONE_AHEAD, attention_mistakes, lower_triangle


def causal_mask_hints(T: int) -> list[Hint]:
    """Mistakes of causal_mask(T) (compared exactly)."""
    tril = lower_triangle(T)
    return [Hint("the diagonal is missing: each position may attend to itself (tril, not tril(-1)).",
                 lambda: tril & ~torch.eye(T, dtype=torch.bool), "causal.mask_diagonal_missing"),
            Hint("you keep the upper triangle (the future): use tril, so position i may attend to j <= i.",
                 lambda: tril.T, "causal.wrong_triangle"),
            Hint(ONE_AHEAD, lambda: torch.ones(T, T, dtype=torch.bool, device=tril.device).tril(1), "causal.one_ahead"),
            Hint("True marks the positions to hide; here True means 'may attend' (PyTorch's convention): invert it.",
                 lambda: ~tril, "causal.mask_inverted")]


def causal_hints(q, k, v, d_in: int, context_length: int | None = None) -> list[Hint]:
    """Mistakes of causal attention on the projected q, k, v (..., T, d_out), computed in their dtype;
    ``context_length``: the size of the module's mask buffer, for the mistake of not slicing it."""
    return attention_mistakes(q, k, v, group="causal", scale_name="sqrt(d_out), the key width",
                              mask=lower_triangle(q.shape[-2], q.device), causal=True, widths={"d_in": d_in},
                              context_length=context_length)


def module_hints(module, x, context_length: int | None = None) -> list[Hint]:
    """``causal_hints`` with the projections of ``module``'s own layers W_query, W_key, W_value (the contract's
    names) on x: a student's module in the public checks, the reference holding the same parameters in the hidden
    suites."""
    return causal_hints(module.W_query(x), module.W_key(x), module.W_value(x), x.shape[-1], context_length)
