"""The runner of Loihi 1: a model quantized to its registers, run on the bit-exact integer emulator.

``LoihiNetwork`` (what ``loihi.compile`` returns) holds one ``LoihiLayer`` (synapses + compartments) per
planned pair (``plan``) and runs them with ``synapses.run_network`` on time-major non-negative integer spike
counts ``[T, B, F]``, counting the chip's events.

Time: the chip delivers every spike one step late, so the output of layer L at chip step t + L is
the float model's step t. ``run`` simulates T + L steps (input padded with L zero steps) and drops
the first L output steps; ``ChipRun.latency_steps = L`` and ``time_steps = T + L`` (every layer is
updated on every simulated step, and so counted).
"""

from __future__ import annotations

from typing import Any, TypedDict

import torch
from torch import nn

from hybridai.core.chip import ChipRun, CompiledNetwork, LayerActivity
from hybridai.core.errors import ShapeError, invalid
from hybridai.neuromorphic.fixed_point import check_integer
from hybridai.neuromorphic.loihi.plan import LoihiLayerPlan
from hybridai.neuromorphic.loihi.synapses import LayerRun, LoihiLayer, run_network


class LayerTrace(TypedDict):
    """One layer of ``LoihiNetwork.trace``: ``[T, B, N]`` on the float model's clock, and the raw run."""

    spikes: torch.Tensor  # float model's dtype
    membrane: torch.Tensor  # v before reset, in float units
    v: torch.Tensor  # int64, after reset
    v_pre: torch.Tensor  # int64, before reset
    run: LayerRun  # on the chip's clock (S = T + L steps)


class LoihiNetwork(CompiledNetwork):
    """A model quantized to Loihi 1 registers, run on the bit-exact integer emulator.

    ``run(x)`` takes non-negative integer spike counts ``[T, B, F]`` (any dtype holding whole numbers)
    and returns a ``ChipRun`` whose outputs have the float model's layout and units.
    """

    backend = "loihi"

    def __init__(
        self,
        plans: list[LoihiLayerPlan],
        decoder: nn.Module | None,
        quirks: str,
        device: torch.device,
        dtype: torch.dtype,
    ) -> None:
        self.plans = plans
        self.layers = [LoihiLayer(p.weights.to(device), p.weight_exp, p.config(), p.name) for p in plans]
        self.decoder = decoder
        self.quirks = quirks
        self.device = device
        self.dtype = dtype
        self.n_inputs = plans[0].weights.shape[1]

    @property
    def latency_steps(self) -> int:
        return len(self.plans)

    def _check_input(self, x: Any) -> torch.Tensor:
        if not torch.is_tensor(x) or x.ndim != 3 or x.shape[2] != self.n_inputs or 0 in x.shape:
            shown = tuple(x.shape) if torch.is_tensor(x) else type(x).__name__
            raise invalid("x.shape", shown, f"[T, B, {self.n_inputs}] time-major spike counts (T, B >= 1)", ShapeError)
        return check_integer(x, "x", non_negative=True)

    def trace(self, x: torch.Tensor) -> list[LayerTrace]:
        """Per layer, aligned to the float model's clock ``[T, B, N]``: ``spikes`` (float), ``membrane``
        (v before reset, float units), ``v`` and ``v_pre`` (integers); plus the raw runs under ``"run"``."""
        counts = self._check_input(x).to(self.device)
        steps, latency = counts.shape[0], self.latency_steps
        padded = torch.cat([counts, counts.new_zeros(latency, *counts.shape[1:])])
        runs = run_network(self.layers, padded, self.quirks)
        out: list[LayerTrace] = []
        for index, (plan, run) in enumerate(zip(self.plans, runs, strict=True), start=1):
            window = slice(index, index + steps)
            v, v_pre = run.v, run.v_pre
            assert v is not None and v_pre is not None  # run_network records both by default
            out.append(
                {
                    "spikes": run.spikes[window].to(self.dtype),
                    "membrane": (v_pre[window].double() / plan.scale).to(self.dtype),
                    "v": v[window],
                    "v_pre": v_pre[window],
                    "run": run,
                }
            )
        return out

    def run(self, x: torch.Tensor) -> ChipRun:
        """Run a batch and count the chip's events over all T + L simulated steps."""
        traced = self.trace(x)
        steps, batch = x.shape[0], x.shape[1]
        last = traced[-1]
        outputs = last["membrane"] if self.plans[-1].output == "membrane" else last["spikes"]
        if self.decoder is not None:
            outputs = self.decoder(outputs)
        layers = []
        simulated = steps + self.latency_steps
        for plan, layer in zip(self.plans, traced, strict=True):
            run, n = layer["run"], plan.weights.shape[0]
            layers.append(
                LayerActivity(
                    name=plan.name,
                    neurons=n,
                    spikes=int(run.spikes.sum()),
                    synaptic_ops=run.synaptic_ops,
                    neuron_updates=n * simulated * batch,
                    active_updates=run.active,
                )
            )
        return ChipRun(
            outputs=outputs.to(x.device),
            layers=tuple(layers),
            samples=batch,
            time_steps=simulated,
            latency_steps=self.latency_steps,
        )

    def describe(self) -> list[dict[str, Any]]:
        """Per layer: kind, size, decays, threshold, weight format, scale and bias."""

        def span(t: torch.Tensor) -> int | tuple[int, int]:
            low, high = int(t.min()), int(t.max())
            return low if low == high else (low, high)

        rows = []
        for p in self.plans:
            rows.append(
                {
                    "layer": p.name,
                    "kind": f"Loihi 1 CUBA-LIF compartments ({p.kind})",
                    "neurons": p.weights.shape[0],
                    "inputs": p.weights.shape[1],
                    "du": span(p.du),
                    "dv": span(p.dv),
                    "vth_mant": span(p.vth_mant),
                    "refractory": p.refractory,
                    "weight_exp": p.weight_exp,
                    "weight_mantissa_range": (int(p.weights.min()), int(p.weights.max())),
                    "weight_bits": f"8-bit signed mantissa, even (7-bit magnitude x 2), quirks={self.quirks!r}",
                    "scale": p.scale,
                    "bias_mant": span(p.bias_mant),
                    "bias_exp": span(p.bias_exp),
                    "output": p.output,
                }
            )
        return rows


__all__ = ["LoihiNetwork"]
