"""The runner of Loihi 2: a sigma-delta network quantized to its registers, run on the integer emulator.

``Loihi2Network`` (what ``loihi2.compile`` returns) holds the planned chip layers (``plan``) as ``GradedLayer``s
and runs them with ``graded_chain.run_graded_network`` on the integers the host sends for the float input,
counting messages and synaptic events per layer.

Time: each Dense holds a message one step (its buffer), so layer ``l`` acts at chip step ``t + l`` on what
the float model computes at step ``t``. The emulator runs every layer on that aligned clock (a layer's bias
acts from its first input step, as the Loihi 1 emulator does); ``ChipRun.latency_steps`` is the number of
Dense layers and ``time_steps`` adds them to T.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from hybridai.core.chip import ChipRun, CompiledNetwork, LayerActivity
from hybridai.core.errors import ShapeError, invalid
from hybridai.neuromorphic.loihi2.graded_chain import GradedLayer, run_graded_network
from hybridai.neuromorphic.loihi2.plan import StagePlan


class Loihi2Network(CompiledNetwork):
    """A sigma-delta network quantized to Loihi 2 registers, run on the bit-exact integer emulator.

    ``run(x)`` takes the float model's input ``[T, B, F]`` and returns a ``ChipRun`` in the float model's
    output layout; ``messages(x)`` the integer messages of every sigma-delta layer ``[T, B, N]`` (int64).
    """

    backend = "loihi2"

    def __init__(
        self, plans: list[StagePlan], decoder: nn.Module | None, width: int | None, device: torch.device
    ) -> None:
        self.plans, self.decoder, self.width, self.device = plans, decoder, width, device
        self.layers = [
            GradedLayer(p.name, p.config, None if p.weights is None else p.weights.to(device), p.weight_exp, p.conv)
            for p in plans
            if p.config is not None
        ]
        last = plans[-1]
        self.readout: torch.Tensor | None = None
        if last.config is None:  # the read-out's Dense
            assert last.weights is not None
            self.readout = last.weights.to(device)

    def host_input(self, x: Any) -> torch.Tensor:
        """The integer input (int64 ``[T, B, F]``) the host sends the input layer for the float input ``x``."""
        maps = len(self.plans) > 1 and self.plans[1].conv is not None
        accepted = (
            "a real tensor [T, B, C, H, W] (time-major feature maps)"
            if maps
            else (f"a real tensor [T, B, {self.width or 'F'}] (time-major frames)")
        )
        if not torch.is_tensor(x) or x.is_complex() or x.ndim != (5 if maps else 3) or 0 in x.shape:
            raise invalid("x", tuple(x.shape) if torch.is_tensor(x) else type(x).__name__, accepted, ShapeError)
        if self.width is not None and x.shape[2] != self.width:
            raise invalid("x.shape", tuple(x.shape), accepted, ShapeError)
        if not bool(torch.isfinite(x).all()):
            raise invalid("x", "a tensor containing NaN or inf", "finite values", ShapeError)
        first = self.plans[0]
        grid = x.to(self.device, torch.float64) / first.grid
        if bool((grid.abs() >= 2**31).any()):
            largest = float(x.abs().max())
            accepted = f"|x| below {2**31 * first.grid:g}: the host sends 32-bit integers on the grid {first.grid:g}"
            raise invalid("x", f"a tensor with |x| up to {largest:g}", accepted, ShapeError)
        if first.input == "delta":
            return torch.floor(grid).long()
        steps = torch.round(grid).long()
        return torch.diff(steps, dim=0, prepend=torch.zeros_like(steps[:1]))

    def messages(self, x: Any) -> list[torch.Tensor]:
        """The integer messages (int64 ``[T, B, N]``) of every sigma-delta layer for the float input ``x``."""
        return [m.long() for m in run_graded_network(self.layers, self.host_input(x)).messages]

    def run(self, x: Any) -> ChipRun:
        a_in = self.host_input(x)
        steps, batch = a_in.shape[:2]
        graded = run_graded_network(self.layers, a_in, self.readout)
        last = self.plans[-1]
        source = graded.readout if graded.readout is not None else graded.messages[-1]
        out = source.double() * last.grid
        out = out.to(x.dtype if x.is_floating_point() else torch.get_default_dtype())
        if self.decoder is not None:
            out = self.decoder(out)
        dense = len(self.plans) - 1  # each Dense holds a message one step: the chip runs T + dense steps
        outputs = [*graded.messages, *([graded.readout] if graded.readout is not None else [])]
        counts = zip(outputs, graded.sent, [*graded.active, None], graded.synaptic_ops, graded.dense_ops, strict=False)
        layers = [
            _activity(stage, *layer_counts, (steps + dense) * batch)
            for stage, layer_counts in zip(self.plans, counts, strict=True)
        ]
        return ChipRun(out, tuple(layers), batch, steps + dense, dense)

    def describe(self) -> list[dict[str, Any]]:
        rows = []
        for p in self.plans:
            row: dict[str, Any] = {"layer": p.name, "grid": p.grid, "input": p.input}
            if p.config is not None:
                vth, bias = torch.as_tensor(p.config.vth), torch.as_tensor(p.config.bias)
                row |= {
                    "kind": "Loihi 2 sigma-delta neurons (ReLU, residue carried)",
                    "vth": int(vth.max()),
                    "bias": (int(bias.min()), int(bias.max())),
                    "state_exp": p.config.state_exp,
                }
            else:
                row["kind"] = "read-out: Dense sums read by the host"
            if p.conv is not None:
                assert p.weights is not None  # the Conv2d's mantissas
                row["conv"] = {"kernel": tuple(p.weights.shape[2:])} | {
                    k: getattr(p.conv, k) for k in ("stride", "padding", "dilation", "groups")
                }
            if p.weights is not None:
                row |= {
                    "neurons": p.weights.shape[0],  # output channels after a Conv2d
                    "inputs": p.weights.shape[1],
                    "weight_exp": p.weight_exp,
                    "weight_mantissa_range": (int(p.weights.min()), int(p.weights.max())),
                    "weight_bits": "8-bit signed mantissa, even (valid in every Lava sign mode)",
                }
            rows.append(row)
        return rows


def _activity(
    plan: StagePlan, out: torch.Tensor, sent: int, active: int | None, ops: int, dense_ops: int, chip_steps: int
) -> LayerActivity:
    """Events of one chip layer (``chip_steps``: steps times samples), as ``run_graded_network`` counts them:
    graded messages once per non-zero payload (``sent``); every neuron is updated on each chip step."""
    neurons = out[0, 0].numel()
    return LayerActivity(
        name=plan.name,
        neurons=neurons,
        spikes=0 if active is None else sent,  # the read-out's sums are read by the host, not sent
        synaptic_ops=ops,
        neuron_updates=neurons * chip_steps,
        active_updates=sent if active is None else active,
        dense_synaptic_ops=dense_ops,
    )
