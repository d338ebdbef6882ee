"""One seed for every random number torch draws, in the worker and in the suites alike."""
import torch


def seed_torch(n: int) -> None:
    """torch.manual_seed(n) for the CPU and, once initialized, CUDA; without the lazy seeding that
    torch.manual_seed queues (formatting a stack trace, about a millisecond) while CUDA is not initialized."""
    torch.default_generator.manual_seed(n)
    if torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(n)
