"""Known mistakes of exercise dictionary (one_hot, the attention lookup, lookup), as functions of their inputs and
of a right implementation given by the check (the reference in the hidden suites, the check's own in the public ones)."""
import math
from collections.abc import Callable

import torch
from diagnosis import Hint
from hints import BATCHED_T, NO_MAX, naive_softmax, reversed_dims, softmax


def dictionary_hints(Q, K, V, t) -> list[Hint]:
    Q64, K64, V64 = Q.double(), K.double(), V.double()
    raw = Q64 @ K64.transpose(-2, -1)
    return [Hint("the temperature multiplies the scores: divide by it (a low temperature must sharpen).",
                 lambda: softmax(raw * t) @ V64, "dictionary.temperature_multiplied"),
            Hint("no sqrt(d_k) scaling in this exercise: softmax(Q K^T / temperature) V.",
                 lambda: softmax(raw / t / math.sqrt(K.shape[-1])) @ V64, "dictionary.sqrt_scaling"),
            Hint("the temperature is ignored: divide the scores by it before the softmax.", lambda: softmax(raw) @ V64,
                 "dictionary.temperature_ignored"),
            Hint("the softmax runs over the queries: it must run over the keys (the last dim of Q K^T).",
                 lambda: softmax(raw / t, -2) @ V64, "dictionary.softmax_over_queries"),
            Hint(BATCHED_T, lambda: softmax(Q @ reversed_dims(K) / t) @ V, "dictionary.batched_T"),
            Hint(NO_MAX, lambda: naive_softmax(Q @ K.transpose(-2, -1) / t) @ V, "dictionary.no_max")]


def one_hot_hints(index: int, n: int, one_hot: Callable) -> list[Hint]:
    """Mistakes of one_hot(index, n); ``one_hot`` is a right one."""
    off = "the 1 is off by one: put it at position index itself (positions start at 0)."
    return [Hint(off, lambda: one_hot((index - 1) % n, n), "dictionary.one_hot_off_by_one"),  # v[-1] is the last
            Hint(off, lambda: one_hot(index + 1, n), "dictionary.one_hot_off_by_one")]


def lookup_hints(table: dict, key, t: float, lookup: Callable) -> list[Hint]:
    """Mistakes of lookup(table, key, t); ``lookup`` is a right one."""
    keys = list(table)
    ranked = sorted(keys, key=repr)
    return [Hint("the values are stacked in one order and the keys in another: use the dict's own order "
                 "(list(table)) for both, and keys.index(key) for the query.",
                 lambda: lookup({k: table[k] for k in ranked}, ranked[keys.index(key)], t), "dictionary.lookup_order"),
            Hint("the temperature multiplies the scores: divide by it (a low temperature must return the stored value).",
                 lambda: lookup(table, key, 1 / t), "dictionary.temperature_multiplied"),
            Hint("you return the stored value itself: lookup blends the values by attention, so a temperature of 1 "
                 "gives a mix.", lambda: torch.tensor(table[key], dtype=torch.float32), "dictionary.lookup_stored_value")]
