"""The runner of nengo: a planned network in nengo's reference simulator, sample by sample, events counted.

``NengoNetwork`` (what ``nengo.compile`` returns) plans ``model`` (``plan.plan``), builds its ``nengo.Network``
(``plan.build_network``) and a ``nengo.Simulator`` once, and runs each sample of ``x [T, B, F]`` in it
(nengo has no batch axis), reading each layer's own T-step window (see ``plan`` for the timing) and
counting spikes, synaptic operations and active updates.
"""

from __future__ import annotations

import math
import threading
import warnings
from typing import Any

import numpy as np
import torch
from torch import nn

from hybridai.core.chip import ChipRun, CompiledNetwork, LayerActivity
from hybridai.core.errors import ShapeError, invalid
from hybridai.neuromorphic.nengo.plan import NengoLayerPlan, build_network, plan
from hybridai.spiking.neurons import check_time_major


def _events(x: np.ndarray) -> np.ndarray:
    """Input events: spike counts count as their magnitude; real-valued currents as one per non-zero."""
    return np.abs(x) if np.array_equal(x, np.round(x)) else (x != 0).astype(np.float64)


class NengoNetwork(CompiledNetwork):
    """A model compiled for nengo: ``run(x)`` simulates each sample of ``x [T, B, F]`` in ``nengo.Simulator``.

    The simulator is built once and reset between samples (nengo has no batch axis). Outputs are in
    the float model's layout: ``[T, B, N]`` spikes (0/1) or membranes (``threshold * v``, the
    voltage before nengo's reset at spike steps), then the model's decoder.
    """

    backend = "nengo"

    def __init__(self, model: nn.Module, *, n_inputs: int | None = None, cuba_refractory_steps: float = 1.5) -> None:
        import nengo
        from nengo.cache import NoDecoderCache

        self.plans, self.decoder = plan(model, n_inputs=n_inputs, cuba_refractory_steps=cuba_refractory_steps)
        self.dt = self.plans[0].dt
        self._lock = threading.Lock()  # one simulator: runs from several threads take turns
        self.network = build_network(self.plans)
        builder = nengo.builder.Model(dt=self.dt, label="hybridai", decoder_cache=NoDecoderCache())
        with warnings.catch_warnings():  # nengo derives max rates from gain/bias for its own records only
            warnings.simplefilter("ignore", RuntimeWarning)
            warnings.simplefilter("ignore", UserWarning)
            self.simulator = nengo.Simulator(self.network, dt=self.dt, model=builder, progress_bar=False)

    @property
    def n_inputs(self) -> int:
        return self.plans[0].n_in

    def _check(self, x: Any) -> torch.Tensor:
        x = check_time_major(x)
        if x.ndim != 3 or x.shape[2] != self.n_inputs:
            raise invalid(
                "x.shape", tuple(x.shape), f"[T, B, {self.n_inputs}] (time-major, {self.n_inputs} inputs)", ShapeError
            )
        if not torch.isfinite(x).all():
            raise invalid("x", "a tensor containing NaN or inf", "finite values")
        return x

    def _simulate(self, sample: np.ndarray) -> list[dict[str, np.ndarray]]:
        """Probed traces of one sample ``[T, F]``, each cut to its layer's own T-step window."""
        sim, net = self.simulator, self.network
        steps = len(sample)
        sim.reset()
        net.feed.values = sample
        sim.run_steps(steps + net.latency_steps, progress_bar=False)
        traces = []
        for probes, delay in zip(net.layer_probes, net.layer_delays, strict=True):
            full = {key: np.asarray(sim.data[probe]) for key, probe in probes.items()}
            window = {key: value[delay : delay + steps] for key, value in full.items()}
            for key in ("voltage", "refractory_time"):
                if key in full:  # the step before each of the window's (zeros before the first simulated step)
                    trace = full[key]
                    window[f"previous_{key}"] = (
                        trace[delay - 1 : delay + steps - 1]
                        if delay
                        else np.concatenate([np.zeros_like(trace[:1]), trace[: steps - 1]])
                    )
            traces.append(window)
        return traces

    def run(self, x: torch.Tensor) -> ChipRun:
        """Simulate every sample of ``x`` (``[T, B, F]``: spike counts or currents) and count events."""
        x = self._check(x)
        steps, batch = x.shape[:2]
        data = x.detach().cpu().double().numpy()
        spikes = [np.zeros((steps, batch, p.n)) for p in self.plans]
        active = [0] * len(self.plans)
        last = self.plans[-1]
        membrane = np.zeros((steps, batch, last.n)) if last.output == "membrane" else None
        for b in range(batch):
            with self._lock:
                traces = self._simulate(data[:, b])
            for i, (p, probed) in enumerate(zip(self.plans, traces, strict=True)):
                spikes[i][:, b] = probed["output"] > 0  # nengo spikes are 1/dt high: 0/1 per step
                active[i] += int(np.count_nonzero((probed["previous_voltage"] != 0) | (probed["input"] != 0)))
                if membrane is not None and i == len(self.plans) - 1:
                    membrane[:, b] = p.threshold * _pre_reset_voltage(p, probed)
        layers = []
        events = _events(data)
        for i, p in enumerate(self.plans):
            incoming = events if i == 0 else spikes[i - 1]
            layers.append(
                LayerActivity(
                    name=p.name,
                    neurons=p.n,
                    spikes=int(spikes[i].sum()),
                    synaptic_ops=int(round(float((incoming.sum((0, 1)) * p.fan_out()).sum()))),
                    neuron_updates=p.n * steps * batch,
                    active_updates=active[i],
                )
            )
        out = torch.from_numpy(membrane if membrane is not None else spikes[-1]).to(x.dtype)
        if self.decoder is not None:
            with torch.no_grad():
                out = self.decoder(out)
        latency = self.network.latency_steps
        return ChipRun(outputs=out, layers=tuple(layers), samples=batch, time_steps=steps, latency_steps=latency)

    def describe(self) -> list[dict[str, Any]]:
        """Per layer: nengo neuron type and time constants (seconds), current scaling, synapse."""
        rows = []
        for i, p in enumerate(self.plans):
            gain = p.gain
            rows.append(
                {
                    "name": p.name,
                    "kind": p.kind,
                    "neurons": p.n,
                    "neuron_type": "nengo.LIF",
                    "tau_rc": p.tau_rc,
                    "tau_ref": p.tau_ref,
                    "min_voltage": -math.inf,
                    "gain": float(gain[0]) if np.all(gain == gain[0]) else (float(gain.min()), float(gain.max())),
                    "bias_current": (float((gain * p.bias).min()), float((gain * p.bias).max())),
                    "bias_path": "synapse (constant node)" if p.kind == "CUBA" else "ensemble bias",
                    "transform": ("W" if p.weight is not None else "I")
                    + (" * dt" if i else "")
                    + (f" / (1 - alpha) = x{p.synaptic_scale:.4g}" if p.tau_s is not None else ""),
                    "synapse": "None" if p.tau_s is None else f"Lowpass(tau={p.tau_s:.6g})",
                    "dt": p.dt,
                    "format": "float64",
                }
            )
        return rows

    def close(self) -> None:
        """Release the simulator."""
        self.simulator.close()


def _pre_reset_voltage(p: NengoLayerPlan, probed: dict[str, np.ndarray]) -> np.ndarray:
    """nengo's voltage before its reset (equal to the probed one where no spike happened), ``[T, n]``.

    Redoes nengo's own update at spike steps: ``v_prev + (J - v_prev) * (1 - exp(-delta / tau_rc))``, where
    ``delta`` is the part of the step outside the refractory period (from the probed refractory time).
    """
    previous = probed["previous_voltage"]
    delta = np.clip(2 * p.dt - probed["previous_refractory_time"], 0.0, p.dt)
    before = previous - (probed["input"] - previous) * np.expm1(-delta / p.tau_rc)
    return np.where(probed["output"] > 0, before, probed["voltage"])
