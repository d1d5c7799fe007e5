"""Noise you can learn: per-qubit noise rates as torch parameters, written into a circuit as PennyLane channels.

``LearnableNoise(n_qubits)`` holds, for every qubit, the rates of the channels it puts after every gate on that
qubit (``depolarizing``: ``qml.DepolarizingChannel``, ``amplitude_damping``: ``qml.AmplitudeDamping``,
``phase_damping``: ``qml.PhaseDamping``) and its read errors (``readout``: P(read 1 | 0) and P(read 0 | 1), as
``qml.ResetError(p_0=P(0|1), p_1=P(1|0))`` just before a measurement in the computational basis, which maps <Z> to
``(1 - P(1|0) - P(0|1)) <Z> + P(0|1) - P(1|0)`` exactly as a classical confusion of the read bit does). Each rate
is ``maximum * sigmoid(logit)``, so gradient descent never leaves the channel's range. ``noise(qfunc)`` is
``qfunc`` with those channels in place (after every gate: templates and operations on more than two wires are
decomposed first); on ``backend="density"`` the rates are trained by backprop with the rest of
a model (fit them to measured expectation values: ``examples/learn_noise.py``). A circuit that measures anything
but Pauli-Z words and probabilities is refused when ``readout`` is on (a read error acts after the rotation into
the measured basis, which a channel before the measurement does not model).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch

from hybridai.core.errors import ConfigError, invalid, positive_int

CHANNELS = {"depolarizing": "DepolarizingChannel", "amplitude_damping": "AmplitudeDamping",
            "phase_damping": "PhaseDamping"}  # fmt: skip
KINDS = tuple(CHANNELS)
MAXIMUM = {"depolarizing": 0.75, "amplitude_damping": 1.0, "phase_damping": 1.0, "readout": 0.5}  # of each rate


class LearnableNoise(torch.nn.Module):
    """Per-qubit noise rates as parameters (see the module docstring).

    Args:
        n_qubits: the number of wires (0 .. n_qubits - 1) that carry noise.
        kinds: the channels put after every gate, a subset of ``("depolarizing", "amplitude_damping",
            "phase_damping")``.
        readout: whether read errors (two rates per qubit) are learned too.
        initial: every rate's starting value, in (0, 0.5); rates stay below their maximum: 0.75 for
            depolarizing (the fully mixing rate), 1 for the dampings, 0.5 for each read error.
    """

    def __init__(
        self, n_qubits: int, kinds: Sequence[str] = KINDS, *, readout: bool = True, initial: float = 0.01
    ) -> None:
        super().__init__()
        self.n_qubits = positive_int("n_qubits", n_qubits)
        kinds = tuple(kinds)
        if not kinds and not readout or any(k not in KINDS for k in kinds) or len(set(kinds)) != len(kinds):
            raise invalid("kinds", kinds, f"distinct names among {KINDS} (or none, with readout=True)")
        if isinstance(initial, bool) or not isinstance(initial, float | int) or not 0 < initial < 0.5:
            raise invalid("initial", initial, "a rate in (0, 0.5)")
        self.kinds, self.readout = kinds, bool(readout)
        names = [*kinds, *(("readout",) if readout else ())]
        self.logits = torch.nn.ParameterDict({
            k: torch.nn.Parameter(torch.full((2 if k == "readout" else 1, self.n_qubits), _logit(initial / MAXIMUM[k]),
                                             dtype=torch.float64))
            for k in names
        })  # fmt: skip

    def rates(self) -> dict[str, torch.Tensor]:
        """Every rate, ``{kind: [n_qubits]}`` (``readout``: ``[2, n_qubits]``, rows P(1|0) and P(0|1))."""
        out = {k: MAXIMUM[k] * torch.sigmoid(v) for k, v in self.logits.items()}
        return {k: v if k == "readout" else v[0] for k, v in out.items()}

    def forward(self, qfunc: Callable[..., Any]) -> Callable[..., Any]:
        """``qfunc`` with this noise in place (the module's call: ``noise(qfunc)``)."""
        import pennylane as qml

        if not callable(qfunc) or isinstance(qfunc, qml.QNode):
            raise invalid("qfunc", qfunc, "a PennyLane quantum function (a QNode's own: qnode.func); a QNode would "
                          "run on its device when called, not be recorded with the noise")  # fmt: skip

        @functools.wraps(qfunc)
        def noisy(*args: Any, **kwargs: Any) -> Any:
            import pennylane as qml

            with qml.queuing.AnnotatedQueue() as queue:
                result = qfunc(*args, **kwargs)
            tape = qml.tape.QuantumScript.from_queue(queue)
            rates = self.rates()
            for op in _gates(tape.operations):
                qml.apply(op)
                for wire in op.wires:
                    self._after_gate(rates, wire)
            for wire in self._read_wires(tape):
                p10, p01 = rates["readout"][:, self._index(wire)]
                qml.ResetError(p01, p10, wires=wire)
            for measurement in tape.measurements:
                qml.apply(measurement)
            return result

        return noisy

    def _after_gate(self, rates: dict[str, torch.Tensor], wire: Any) -> None:
        import pennylane as qml

        i = self._index(wire)
        for kind in self.kinds:
            getattr(qml, CHANNELS[kind])(rates[kind][i], wires=wire)

    def _read_wires(self, tape: Any) -> list[Any]:
        """The wires read by the tape's measurements (none without ``readout``), refusing what is not read in Z."""
        if not self.readout:
            return []
        import pennylane as qml

        wires: list[Any] = []
        for m in tape.measurements:
            kind = type(m).__name__
            z_word = m.obs is not None and m.obs.pauli_rep is not None and all(
                set(word.values()) <= {"Z"} for word in m.obs.pauli_rep)  # fmt: skip
            if not (kind == "ProbabilityMP" and m.obs is None or kind in ("ExpectationMP", "VarianceMP") and z_word):
                raise ConfigError(
                    f"LearnableNoise(readout=True) with the measurement {m}: read errors are learned for Pauli-Z "
                    "words and probabilities; accepted: those measurements, or readout=False"
                )
            wires += [w for w in (m.wires or qml.wires.Wires(range(self.n_qubits))) if w not in wires]
        return wires

    def _index(self, wire: Any) -> int:
        if not isinstance(wire, int) or not 0 <= wire < self.n_qubits:
            raise ConfigError(
                f"LearnableNoise(n_qubits={self.n_qubits}) met wire {wire!r}; accepted: wires 0 .. {self.n_qubits - 1}"
            )
        return wire

    def extra_repr(self) -> str:
        return f"n_qubits={self.n_qubits}, kinds={self.kinds}, readout={self.readout}"


def _gates(operations: Sequence[Any]) -> list[Any]:
    """``operations`` with templates and operations on more than two wires decomposed, so that noise follows every
    gate (as a device's noise does), not every template."""
    import pennylane as qml

    out: list[Any] = []
    for op in operations:
        template = type(op).__module__.startswith("pennylane.templates")
        if op.has_decomposition and (template or len(op.wires) > 2):
            with qml.QueuingManager.stop_recording():  # pieces, not operations of the circuit being recorded
                pieces = op.decomposition()
            out += _gates(pieces)
        else:
            out.append(op)
    return out


def _logit(p: float) -> float:
    import math

    return math.log(p / (1 - p))
