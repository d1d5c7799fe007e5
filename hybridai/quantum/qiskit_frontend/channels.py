"""PennyLane noise channels as a converted circuit records them: which channel, on which qubits, and where its rates
are among the circuit's parameters (``ChannelSpec``). The circuit holds a labelled, empty ``kraus`` instruction in
each channel's place (``conversion``), which no transpiler pass moves a gate across; ``density`` simulates it
(``hybridai.quantum.density.pennylane_channels``), the other Qiskit families refuse it by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from hybridai.core.errors import ConfigError, UnsupportedOperationError

# name -> the rates PennyLane's constructor takes, in order
RATES = {
    "BitFlip": ("p",),
    "PhaseFlip": ("p",),
    "DepolarizingChannel": ("p",),
    "AmplitudeDamping": ("gamma",),
    "GeneralizedAmplitudeDamping": ("gamma", "p"),
    "PhaseDamping": ("gamma",),
    "ResetError": ("p_0", "p_1"),
    "PauliError": ("p",),
    "ThermalRelaxationError": ("pe", "t1", "t2", "tq"),
}
CONSTANT = ("QubitChannel",)  # Kraus matrices as the channel's data: constant PTMs
NAMES = (*RATES, *CONSTANT)


@dataclass(frozen=True)
class ChannelSpec:
    """One channel of a circuit: its name, PennyLane hyperparameters (``PauliError``'s operators), the indices of
    its rates among the circuit's parameters, and (``QubitChannel``) its constant PTM's bytes."""

    name: str
    hyper: tuple = ()
    rates: tuple[int, ...] = ()
    kraus: bytes | None = None  # complex128 [K, 2^k, 2^k]
    k: int = 1

    def kraus_matrices(self) -> np.ndarray:
        assert self.kraus is not None
        d = 2**self.k
        return np.frombuffer(self.kraus, dtype=np.complex128).reshape(-1, d, d)


def spec_of(op: Any, first: int) -> tuple[ChannelSpec, list[torch.Tensor]]:
    """The spec of PennyLane channel ``op`` whose rates become circuit parameters ``first, first + 1, ...``, and
    those rates (float64 tensors, scalars or ``[rows]``)."""
    name = op.name
    k = len(op.wires)
    data = list(op.data)
    if name in CONSTANT:  # PennyLane checks the Kraus maps when it makes the operation (constants: it converts them)
        matrices = np.stack([np.asarray(m.detach() if torch.is_tensor(m) else m, dtype=np.complex128) for m in data])
        return ChannelSpec(name, (), (), matrices.tobytes(), k), []
    if name not in RATES:
        raise UnsupportedOperationError(
            f"the density backend does not know the channel {name} on wires {list(op.wires)}; accepted: "
            f"{', '.join(NAMES)}, or a QubitChannel of its Kraus matrices"
        )
    hyper = (op.hyperparameters["operators"],) if name == "PauliError" else ()
    rates = [r if torch.is_tensor(r) else torch.tensor(float(r), dtype=torch.float64) for r in data]
    for r in rates:
        if r.dim() > 1 or r.is_complex():
            raise ConfigError(
                f"{name} on wires {list(op.wires)} has a rate of shape {tuple(r.shape)} and dtype {r.dtype}; "
                "accepted: a real scalar or one value per sample ([B])"
            )
    return ChannelSpec(name, hyper, tuple(range(first, first + len(rates))), None, k), rates
