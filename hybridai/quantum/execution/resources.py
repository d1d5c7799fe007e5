"""Memory a simulation would need, checked against what the machine has before anything is allocated.

Simulators allocate the state at once: 2^n amplitudes for a statevector, 4^n for a density matrix. At
40 qubits that is 16 TiB, and asking for it ends in a raw ``MemoryError``, ``std::bad_alloc`` or a
transpiler error; hybridai refuses it first with a ``ResourceLimitError`` naming ``n_qubits``.
"""

from __future__ import annotations

import torch

from hybridai.core.errors import ResourceLimitError
from hybridai.core.machine import physical_memory


def memory_limit(device: torch.device) -> int:
    """Default memory limit in bytes: half the free GPU memory, or half the physical RAM."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return free // 2
    return physical_memory() // 2


def check_state_memory(
    backend: str,
    n_qubits: int,
    *,
    density: bool = False,
    copies: int = 1,
    itemsize: int = 16,
    limit: int | None = None,
    remedy: str = "fewer qubits, or hardware ('ibm:<device>')",
    where: str = "half the RAM",
) -> None:
    """Refuse a simulation of ``n_qubits`` on ``backend`` whose ``copies`` states (statevectors, or density
    matrices when ``density``) of ``itemsize`` bytes per amplitude would exceed ``limit`` bytes (default
    half the RAM; ``where`` says what the limit is); ``remedy`` says what to do instead."""
    limit = physical_memory() // 2 if limit is None else limit
    amplitudes = 4**n_qubits if density else 2**n_qubits
    estimate = amplitudes * itemsize * copies
    if estimate > limit:
        what = "density matrix" if density else "statevector"
        raise ResourceLimitError(
            f"n_qubits={n_qubits} on {backend!r} needs a {what} of about {estimate / 2**30:.4g} GiB "
            f"({copies} cop{'y' if copies == 1 else 'ies'}), above the {limit / 2**30:.4g} GiB available to it "
            f"({where}); accepted: {remedy}"
        )
