import torch


def one_hot(index, n):
    if index < 0 or index >= n:
        raise ValueError(f"index {index} out of range for n={n}")
    return torch.nn.functional.one_hot(torch.tensor(index), n).float()


def attention(Q, K, V, temperature=1.0):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
        raise ValueError("mismatched sizes")
    return torch.softmax(torch.matmul(Q, K.transpose(-1, -2)) / temperature, dim=-1) @ V


def lookup(table, key, temperature):
    keys = list(table.keys())
    if key not in table:
        raise KeyError(key)
    K = torch.eye(len(keys))
    V = torch.tensor([list(map(float, table[k])) for k in keys])
    return attention(K[keys.index(key)][None], K, V, temperature)[0]
