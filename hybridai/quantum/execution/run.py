"""Run tapes on a quantum executor, with zero-noise extrapolation around any executor.

``execute(executor, tapes, config)`` is what layers and kernels call. It settles the call once
(``QuantumExecutor.settle``: shots, seed and ``diff_method="best"`` made final) before any executor runs.
Without mitigation, or when the executor runs the requested engine itself (``capabilities.mitigation_engines``,
e.g. IBM's own ZNE), it hands the settled call over. Otherwise every tape is folded once per scale factor
(``mitigation.folding``), ALL folded tapes go to the executor in ONE ``execute`` call (with
``keep_gates=True`` so nothing cancels the folds), and each result is extrapolated to zero noise.
An executor whose optimiser respects barriers (``capabilities.folds_need_barriers``: the Qiskit
executors) gets a ``FoldBarrier`` between folded blocks instead, and ``keep_gates=False``: it runs the
folded circuits as it runs any other (Qiskit: at its ``optimization_level``), so the scale-factor-1
circuit is exactly the unmitigated one and "noisy" equals ZNE's own noisy value at scale 1.
An executor that knows the gates its noise acts on (``QuantumExecutor.native_operations(tape)``: a PennyLane
device with a noise transform, whose noise follows each of its own gates) gets those gates folded, so that each fold
adds the noise of one gate. The extrapolation is differentiable: d(mitigated)/d(noisy) from ``ZNE.combine`` is
applied by the chain rule to whatever gradients the executor gives (autograd or the parameter-shift rule).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hybridai.core.contracts import QuantumExecutor
from hybridai.core.errors import invalid
from hybridai.core.execution import Execution, ExecutionConfig
from hybridai.quantum.execution.result_check import check_execution
from hybridai.quantum.mitigation.folding import fold_tape
from hybridai.quantum.mitigation.zne import ZNE, ZNEResult


def execute(executor: QuantumExecutor, tapes: Any, config: ExecutionConfig) -> Execution:
    """``executor.execute(tapes, config)`` on the settled call, with ``config.mitigation`` applied around it when
    needed."""
    zne = config.mitigation
    if zne is not None and not isinstance(zne, ZNE):
        raise invalid("mitigation", zne, "None or hybridai.ZNE(...)")
    caps = executor.capabilities
    if zne is not None and zne.engine != "mitiq" and zne.engine not in caps.mitigation_engines:
        raise invalid("mitigation", zne, f"engine='mitiq' on {executor.name!r} (engine={zne.engine!r} needs an "
                      f"executor that runs it itself, such as 'ibm:...')")  # fmt: skip
    tapes, config = executor.settle(tapes, config)
    if zne is None or zne.engine in caps.mitigation_engines:
        return check_execution(executor, tapes, executor.execute(tapes, config), config.wires)
    if caps.exact and caps.runs_channels and not _has_channels(tapes):
        _warn_noiseless(executor, stacklevel=3)
    n_folds = len(zne.scale_factors)
    barriers = caps.folds_need_barriers
    folded = [
        f for tape in tapes for f in fold_tape(tape, zne, config.wires, barriers, executor.native_operations(tape))
    ]
    run = executor.execute(folded, config.replace(mitigation=None, keep_gates=not barriers))
    check_execution(executor, folded, run, config.wires)
    results, records = [], []
    for i, tape in enumerate(tapes):
        result, record = _extrapolate(run.results[i * n_folds : (i + 1) * n_folds], zne, tape.batch_size)
        results.append(result)
        records.append(record)
    return Execution(results, run.stats, records[0] if len(records) == 1 else records)


def _extrapolate(noisy_results: list[Any], zne: ZNE, batch_size: int | None) -> tuple[Any, ZNEResult]:
    """Zero-noise results (same layout as one noisy result) and the record for plots."""
    as_tuple = isinstance(noisy_results[0], tuple | list)
    parts = [r if as_tuple else (r,) for r in noisy_results]  # [F][M] tensors
    columns = [torch.stack([torch.as_tensor(p[m]) for p in parts]) for m in range(len(parts[0]))]  # [F, ...]
    flat = torch.cat([c.reshape(c.shape[0], 1 if batch_size is None else batch_size, -1) for c in columns], -1)
    noisy = flat.detach().cpu().double().numpy()  # [F, B, R]
    value, weights = zne.combine(noisy)
    weights_t = torch.tensor(np.array(weights), dtype=flat.dtype, device=flat.device)  # a copy: weights may be a view
    mitigated = torch.as_tensor(value, dtype=flat.dtype, device=flat.device) + (weights_t * (flat - flat.detach())).sum(
        0
    )  # the value from Mitiq, the gradient by the chain rule
    out, start = [], 0
    for c in columns:
        width = c[0].reshape(1 if batch_size is None else batch_size, -1).shape[-1]
        out.append(mitigated[..., start : start + width].reshape(c.shape[1:]))
        start += width
    record = ZNEResult(zne.scale_factors, noisy, np.asarray(value), zne.extrapolation,
                       zne.coefficients if zne.linear else None)  # fmt: skip
    return (tuple(out) if as_tuple else out[0]), record


def _has_channels(tapes: list[Any]) -> bool:
    import pennylane as qml

    return any(isinstance(op, qml.operation.Channel) for tape in tapes for op in tape.operations)


def check_mitigation(executor: QuantumExecutor, mitigation: Any) -> Any:
    """``mitigation`` if ``executor`` can be mitigated with it (a warning when it has nothing to mitigate)."""
    if mitigation is None:
        return None
    if not isinstance(mitigation, ZNE):
        raise invalid("mitigation", mitigation, "None or hybridai.ZNE(...)")
    caps = executor.capabilities
    if mitigation.engine != "mitiq" and mitigation.engine not in caps.mitigation_engines:
        raise invalid(
            "mitigation", mitigation, f"engine='mitiq' on {executor.name!r} (engine={mitigation.engine!r} "
            "needs an 'ibm:' backend)",
        )  # fmt: skip
    if caps.exact and not caps.runs_channels:  # else: known once the circuit is (execute)
        _warn_noiseless(executor, stacklevel=4)
    return mitigation


def _warn_noiseless(executor: QuantumExecutor, stacklevel: int) -> None:
    import warnings

    warnings.warn(
        f"ZNE on the exact, noiseless {executor.name!r} backend has no noise to remove: it runs more circuits and "
        "corrects nothing (exact values come out the same; values sampled with shots may differ, by shot noise "
        "only); use mitigation=None here, or a noisy backend (or noise channels in the circuit, on 'density')",
        stacklevel=stacklevel,
    )
