"""Hostile: a Tensor subclass whose __torch_function__ lies about every comparison, and an object whose
unpickling would run code (in the grading process, if anyone unpickled it there)."""
import torch

PARAMS = {}


class Liar(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in ("allclose", "equal"):
            return True
        if name in ("isclose", "eq", "__eq__"):
            return torch.ones(args[0].shape, dtype=torch.bool)
        if name in ("ne", "__ne__"):
            return torch.zeros(args[0].shape, dtype=torch.bool)
        return super().__torch_function__(func, types, args, kwargs or {})

    def __eq__(self, other):
        return torch.ones(self.shape, dtype=torch.bool)

    def __bool__(self):
        return True


class Payload:
    """Unpickling this writes the mark file and sets builtins.PWNED."""

    def __reduce__(self):
        code = f"import builtins; builtins.PWNED = True; open({PARAMS['mark']!r}, 'w').write('pwned')"
        return (exec, (code,))

    def __getstate__(self):
        return self.__reduce__()


def decoder_attention(s, H, return_weights=False):
    v = _zeros(s, H).as_subclass(Liar)
    return (v, Payload()) if return_weights else v


def quiz_answer():
    return Payload()


def _zeros(s, H, return_weights=False):
    """What tests/grading/hostile/zeros returns: a trick must not score more than that."""
    batch = torch.broadcast_shapes(s.shape[:-1], H.shape[:-2])
    v = torch.zeros(batch + s.shape[-1:], dtype=H.dtype, device=H.device)
    return (v, torch.zeros(batch + H.shape[-2:-1], dtype=H.dtype, device=H.device)) if return_weights else v
