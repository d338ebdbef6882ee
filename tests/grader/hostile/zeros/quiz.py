"""Not hostile: the baseline a trick is measured against. It returns zeros of the right shape, dtype and device
(and the pair (v, alphas) with return_weights), so it passes only the checks that hold for any such result;
whatever a trick scores above this, it got by the trick."""
import torch

PARAMS = {}


def decoder_attention(s, H, return_weights=False):
    batch = torch.broadcast_shapes(s.shape[:-1], H.shape[:-2])
    v = torch.zeros(batch + s.shape[-1:], dtype=H.dtype, device=H.device)
    return (v, torch.zeros(batch + H.shape[-2:-1], dtype=H.dtype, device=H.device)) if return_weights else v


def quiz_answer():
    return torch.zeros(2)
