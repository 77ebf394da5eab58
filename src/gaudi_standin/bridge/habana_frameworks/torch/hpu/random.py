"""``habana_frameworks.torch.hpu.random`` on the stand-in (also ``torch.hpu``'s random-number functions).

The stand-in's device is the host, so its generator is the CPU's: ``torch.manual_seed`` makes ``hpu`` random numbers
reproducible, and the state functions read and restore that generator. Each process drives one HPU on a Gaudi, so the
``*_all`` functions see one state. optimum-habana's ``GaudiTrainer`` imports this module and calls these.
"""

from __future__ import annotations

import torch

__all__ = [
    "get_rng_state",
    "get_rng_state_all",
    "initial_seed",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "set_rng_state",
    "set_rng_state_all",
]

_Device = int | str | torch.device | None


def manual_seed(seed: int) -> None:
    """Seed the device's random number generator."""
    torch.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every device's generator (one per process on a Gaudi)."""
    torch.manual_seed(seed)


def seed() -> None:
    """Seed the device's generator with a non-deterministic random number."""
    torch.seed()


def seed_all() -> None:
    """As :func:`seed`, for every device of the process (one)."""
    torch.seed()


def initial_seed() -> int:
    """The seed the device's generator started from."""
    return torch.initial_seed()


def get_rng_state(device: _Device = "hpu") -> torch.Tensor:
    """The device generator's state."""
    return torch.get_rng_state()


def set_rng_state(new_state: torch.Tensor, device: _Device = "hpu") -> None:
    """Restore the device generator's state."""
    torch.set_rng_state(new_state)


def get_rng_state_all() -> list[torch.Tensor]:
    """The state of every device's generator: one per process."""
    return [get_rng_state()]


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    """Restore every device's generator from :func:`get_rng_state_all`'s list."""
    for state in new_states:
        set_rng_state(state)
