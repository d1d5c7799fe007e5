"""The models of ``hybridai demo``: one head (Tanh -> circuit -> Linear) behind a front end chosen by the chip.

Every model classifies the same event-camera recordings (``[T, B, 512]`` event counts per time bin, two
polarities of a 16x16 sensor) and ends in the same head::

    features [B, n_qubits] -> Tanh -> QuantumLayer (n_qubits) -> Linear -> logits

Front ends, one per chip family (``FRONT_ENDS``):

- ``sigma-delta`` (``loihi2``): ``SigmaDelta(input="delta") -> Linear 512->32 (no bias) -> SigmaDelta(32)
  -> Linear 32->n_qubits (no bias, the chip's read-out) -> RateDecoder``. The host sends each bin's event
  counts (one event worth 2^-1) as deltas, so the input layer's activation is the events so far at each
  pixel and it sends every new event (threshold: one event); the hidden layer (grid 2^-6) sends a change of
  its ReLU activation once it reaches 0.1; the read-out sums what it receives. Trained through
  ``loihi2.fake_quantize``: with the weights the chip holds (8-bit mantissas), so the chip computes the
  trained front end message for message;
- ``LIF`` (``loihi``, ``nengo``): ``Linear 512->32 -> LIF -> RateDecoder -> Linear 32->n_qubits``;
- ``CNN`` (``akida``): the events summed over time as ``[B, 2, 16, 16]`` frames ->
  ``Conv2d 2->8 -> ReLU -> MaxPool -> Conv2d 8->16 -> ReLU -> MaxPool -> Flatten -> Linear 256->32 -> ReLU
  -> Linear 32->n_qubits`` (Akida quantizes it to 8 bits with a calibration batch);
- ``dense`` (the baseline for every chip): events averaged over time ``-> Linear 512->32 -> ReLU ->
  Linear 32->n_qubits``, in float on the CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from hybridai.core.errors import invalid
from hybridai.quantum import QuantumLayer
from hybridai.spiking import LIF, RateDecoder, SigmaDelta

SENSOR = (16, 16, 2)  # width, height, polarities
HIDDEN = 32
N_LAYERS = 2  # entangling layers of the circuit
FRONT_ENDS = {"loihi2": "sigma-delta", "loihi": "LIF", "nengo": "LIF", "akida": "CNN"}
VARIANTS = ("hybrid", "no circuit", "classical front end")
# one event's value at the sigma-delta input (2^-1, an exact grid step: at 1 the hidden layer's inputs are twice as
# large and training stalls for some seeds), the hidden layer's threshold and grid
SIGMA_DELTA = {"event": 2.0**-1, "hidden_threshold": 0.1, "hidden_scale": 2.0**-6}


def angle_classifier(inputs, weights):
    """Angle embedding of tanh features in [-pi/2, pi/2] (RX(pi) and RX(-pi) are the same state: a saturated
    tanh would erase the sign), entangling layers, <Z> per qubit."""
    import pennylane as qml

    wires = range(weights.shape[1])
    qml.AngleEmbedding(inputs * (math.pi / 2), wires=wires)
    qml.BasicEntanglerLayers(weights, wires=wires)
    return [qml.expval(qml.PauliZ(w)) for w in wires]


def to_frames(x: torch.Tensor) -> torch.Tensor:
    """Event counts ``[T, B, 2 * 16 * 16]`` -> the counts summed over time, ``[B, 2, 16, 16]`` (polarity first)."""
    width, height, polarities = SENSOR
    return x.sum(0).reshape(x.shape[1], polarities, height, width)


@dataclass(frozen=True)
class EventModel:
    """One model of the demo: ``model`` is evaluated and deployed; ``trained`` is what the optimizer runs (the
    model itself, or with its chip front end fake-quantized: the same parameters); ``frames``: it takes
    ``[B, 2, 16, 16]`` frames (``to_frames``) instead of time-major counts; ``event``: the value of one event at
    its input; ``dtype``: its parameters'; ``fake_quantized``: the chip front end (the first layers of ``model``)
    that ``trained`` runs through ``loihi2.fake_quantize`` (None when the model trains in float)."""

    model: nn.Sequential
    trained: nn.Module
    frames: bool = False
    event: float = 1.0
    dtype: torch.dtype = torch.float32
    fake_quantized: nn.Sequential | None = None

    @property
    def batch_dim(self) -> int:
        return 0 if self.frames else 1

    def inputs(self, x: torch.Tensor) -> torch.Tensor:
        """The recordings ``x`` (``[T, B, 512]`` event counts) in this model's layout and dtype."""
        return ((to_frames(x) if self.frames else x) * self.event).to(self.dtype)


def build_model(front: str, variant: str, n_qubits: int, n_classes: int, seed: int) -> EventModel:
    """The demo's model with ``front`` (a value of ``FRONT_ENDS``, or ``"dense"``) and ``variant``: ``"hybrid"``
    (the circuit), ``"no circuit"`` (a Linear + Tanh in its place) or ``"classical front end"`` (the ``dense``
    front end in place of ``front``). Seeded; the global RNG untouched."""
    if variant not in VARIANTS:
        raise invalid("variant", variant, f"one of {VARIANTS}")
    if variant == "classical front end":
        front = "dense"
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        body = _front_body(front)
        if variant == "no circuit":
            middle = [nn.Linear(n_qubits, n_qubits), nn.Tanh()]
        else:
            middle = [QuantumLayer(angle_classifier, n_qubits, {"weights": (N_LAYERS, n_qubits)})]
        projection = nn.Linear(HIDDEN, n_qubits, bias=front != "sigma-delta")  # the chip's read-out has no bias
        head = [nn.Tanh(), *middle, nn.Linear(n_qubits, n_classes)]
    if front == "sigma-delta":
        from hybridai.neuromorphic import loihi2

        chip = nn.Sequential(*body, projection, RateDecoder()).double()
        rest = nn.Sequential(*head).double()
        model = nn.Sequential(*chip, *rest)
        trained = nn.Sequential(loihi2.fake_quantize(chip), *rest)
        return EventModel(model, trained, event=SIGMA_DELTA["event"], dtype=torch.float64, fake_quantized=chip)
    model = nn.Sequential(*body, projection, *head)
    return EventModel(model, model, frames=front == "CNN")


def _front_body(front: str) -> list[nn.Module]:
    """The front end's layers up to its ``HIDDEN`` features (the projection to the qubits follows)."""
    inputs = math.prod(SENSOR)
    if front == "sigma-delta":
        p = SIGMA_DELTA
        return [
            SigmaDelta(threshold=p["event"], scale=p["event"], input="delta"),
            nn.Linear(inputs, HIDDEN, bias=False),
            SigmaDelta(threshold=p["hidden_threshold"], scale=p["hidden_scale"], features=HIDDEN, learn_bias=True),
        ]
    if front == "LIF":
        return [nn.Linear(inputs, HIDDEN), LIF(0.8, reset="zero"), RateDecoder()]
    if front == "CNN":
        maps = (SENSOR[0] // 4) * (SENSOR[1] // 4) * 16
        return [nn.Conv2d(SENSOR[2], 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1),
                nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(maps, HIDDEN), nn.ReLU()]  # fmt: skip
    if front == "dense":
        return [RateDecoder(), nn.Linear(inputs, HIDDEN), nn.ReLU()]
    raise invalid("front", front, f"one of {sorted({*FRONT_ENDS.values(), 'dense'})}")


__all__ = ["FRONT_ENDS", "HIDDEN", "SENSOR", "EventModel", "angle_classifier", "build_model", "to_frames"]
