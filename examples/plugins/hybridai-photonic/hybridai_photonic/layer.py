"""``PhotonicLinear``: a Linear layer computed by the simulated photonic chip.

Per sample: the input is scaled by its max |x| and written to the modulators by a DAC
(``input_bits``); light passes the programmed meshes (the realised matrix, see ``mesh``);
the coherent detectors add noise (``detector_noise`` of full scale, divided by the amplitude
transmission of the lossy mesh, as the receiver gain restores the signal); an ADC
(``adc_bits``, full scale = the input's optical power) digitises; the host multiplies back the
scales and adds the bias. Quantisers pass gradients straight through; the realised matrix
passes its gradient to ``weight`` unchanged (exact in the ideal configuration).
"""

from __future__ import annotations

import zlib
from typing import Any

import torch
from hybridai import HybridModule, backends
from hybridai.core.errors import ConfigError, ShapeError, invalid
from hybridai.core.text_table import format_table
from torch import nn

from .backend import PhotonicBackend, PhotonicConfig
from .mesh import Programmed, program


def _quantise(v: torch.Tensor, bits: int | None) -> torch.Tensor:
    """Values in [-1, 1] on ``2**(bits-1) - 1`` levels each side; straight-through gradient."""
    if bits is None:
        return v
    levels = 2 ** (bits - 1) - 1
    q = torch.round(v.clamp(-1, 1) * levels) / levels
    return v + (q - v).detach()


class PhotonicLinear(HybridModule):
    """``y = x W^T + b`` on a simulated photonic chip; parameters ``weight`` and ``bias`` as ``nn.Linear``."""

    domain = "classical"
    default_backend = "photonic"

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, *, backend: Any = None, **options: Any
    ) -> None:
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        linear = nn.Linear(self.in_features, self.out_features, bias=bias)
        self.weight = linear.weight
        self.bias = linear.bias
        self._cache: tuple[Any, torch.Tensor, Programmed] | None = None
        self.set_backend(backend or self.default_backend, **options)

    @classmethod
    def from_linear(cls, linear: nn.Linear, backend: Any = None, **options: Any) -> PhotonicLinear:
        """Wrap ``linear``, sharing its Parameter objects (optimizers and checkpoints keep working)."""
        layer = cls.__new__(cls)
        HybridModule.__init__(layer)
        layer.in_features, layer.out_features = linear.in_features, linear.out_features
        layer.weight = linear.weight
        layer.bias = linear.bias
        layer._cache = None
        layer.set_backend(backend or cls.default_backend, **options)
        return layer

    def to_linear(self) -> nn.Linear:
        """A plain ``nn.Linear`` sharing this layer's parameters (back to torch)."""
        linear = nn.Linear(self.in_features, self.out_features, bias=self.bias is not None, device="meta")
        linear.weight, linear.bias = self.weight, self.bias
        return linear

    def set_backend(self, backend: Any, **options: Any) -> PhotonicLinear:
        resolved = backends.get(backend, domain="classical", **options)
        if not isinstance(resolved, PhotonicBackend):
            raise ConfigError(
                f"backend={resolved.name!r} cannot run a PhotonicLinear; accepted: a 'photonic' backend. To move the "
                "layer back to torch use layer.to_linear() or hybridai_photonic.unplace(model)"
            )
        super().set_backend(resolved)
        self.config: PhotonicConfig = resolved.config
        self.seed = resolved.seed
        self.generator: torch.Generator | None = None  # seeded on the first noisy run (noise_generator)
        self._cache = None
        return self

    def noise_generator(self) -> torch.Generator:
        """The detector-noise generator of this layer, made on first use after placement: seeded from
        the backend's ``seed`` and the weights at that moment (reproducible per seed, distinct per layer,
        the same after a state_dict is loaded into a freshly placed model), or unseeded."""
        if self.generator is None:
            generator = torch.Generator()
            if self.seed is None:
                generator.seed()
            else:
                weights = zlib.crc32(self.weight.detach().cpu().to(torch.float64).numpy().tobytes())
                generator.manual_seed((self.seed * 1_000_003 + weights) % 2**63)
            self.generator = generator
        return self.generator

    def programmed(self) -> Programmed:
        """The chip's programming for the current weights (recomputed when the weights change)."""
        key = (self.weight._version, self.weight.data_ptr(), self.config.phase_bits)
        if self._cache is None or self._cache[0] != key:
            weight = self.weight.detach().cpu().to(torch.float64).numpy()
            made = program(weight, self.config.phase_bits)
            self._cache = (key, torch.from_numpy(made.matrix), made)
        return self._cache[2]

    def realised_weight(self) -> torch.Tensor:
        """The weight matrix the chip actually applies (float64, on the CPU)."""
        self.programmed()
        return self._cache[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not torch.is_tensor(x):
            raise invalid("x", type(x).__name__, f"a torch.Tensor [..., {self.in_features}]", ShapeError)
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise invalid("x.shape", tuple(x.shape), f"[..., {self.in_features}] (in_features)", ShapeError)
        if not x.is_floating_point():
            raise invalid("x.dtype", x.dtype, "a floating dtype", ShapeError)
        self.programmed()
        realised = self._cache[1].to(device=x.device, dtype=x.dtype)
        weight = self.weight.to(x.dtype)
        effective = weight + (realised - weight).detach()  # the chip's matrix, the weight's gradient
        bias = None if self.bias is None else self.bias.to(x.dtype)
        c = self.config
        if c.ideal:
            return nn.functional.linear(x, effective, bias)
        scale = self._cache[2].scale
        if scale == 0:
            return nn.functional.linear(x, effective, bias)
        peak = x.detach().abs().amax(dim=-1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)
        amplitudes = _quantise(x / peak, c.input_bits)  # DAC
        power = amplitudes.detach().norm(dim=-1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)
        field = nn.functional.linear(amplitudes, effective / scale) / power  # |field| <= 1: the mesh is lossless
        if c.detector_noise:
            transmission = 10 ** (-c.loss_db * self._cache[2].depth / 20)
            noise = torch.randn(field.shape, generator=self.noise_generator(), dtype=torch.float64)
            field = field + (noise * (c.detector_noise / transmission)).to(device=x.device, dtype=x.dtype)
        out = _quantise(field, c.adc_bits) * (power * peak * scale)  # ADC, then the host's scales
        return out if bias is None else out + bias

    def energy_per_sample(self) -> dict[str, float]:
        """Joules per inference (one input vector) by part, from the config's energy constants.

        Converters with ``None`` bits (ideal) are not counted.
        """
        c, e, p = self.config, self.config.energy, self.programmed()
        conversion = lambda fom, bits, n: 0.0 if bits is None else n * fom * 2**bits  # noqa: E731
        loss = 10 ** (c.loss_db * p.depth / 10)
        parts = {
            "dac": conversion(e.dac_fom, c.input_bits, self.in_features),
            "adc": conversion(e.adc_fom, c.adc_bits, self.out_features),
            "laser": self.in_features * e.laser_energy * loss / e.wall_plug_efficiency,
            "phase shifters": (p.n_mzi + p.n_attenuators) * e.heater_power / e.symbol_rate,
        }
        parts["total"] = sum(parts.values())
        return parts

    def size_description(self) -> str:
        p = self.programmed()
        bits = "exact" if self.config.phase_bits is None else f"{self.config.phase_bits}-bit"
        return f"{p.n_mzi} MZIs, {bits} phases"

    def extra_repr(self) -> str:
        c = self.config
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
            f"phase_bits={c.phase_bits}, input_bits={c.input_bits}, adc_bits={c.adc_bits}, loss_db={c.loss_db}, "
            f"detector_noise={c.detector_noise}, backend={self.backend!r}"
        )

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_cache"] = None  # recomputed from the weights after loading
        return state


def unplace(model: nn.Module) -> nn.Module:
    """Replace every ``PhotonicLinear`` in ``model`` by a plain ``nn.Linear`` (same parameters); in place."""
    for name, child in list(model.named_children()):
        if isinstance(child, PhotonicLinear):
            setattr(model, name, child.to_linear())
        else:
            unplace(child)
    return model


def energy_report(model: nn.Module, *, show: bool = False) -> tuple[str, float]:
    """A table of energy per inference (picojoules) for each photonic layer, and the total in joules."""
    rows, total = [], 0.0
    for name, layer in model.named_modules():
        if isinstance(layer, PhotonicLinear):
            parts = layer.energy_per_sample()
            total += parts["total"]
            rows.append([name or type(layer).__name__, *(f"{parts[k] * 1e12:.2f}" for k in parts)])
    keys = ["dac", "adc", "laser", "phase shifters", "total"]
    text = format_table(["layer", *(f"{k} (pJ)" for k in keys)], rows, ["all", "", "", "", "", f"{total * 1e12:.2f}"])
    if show:
        print(text)
    return text, total


__all__ = ["PhotonicLinear", "energy_report", "unplace"]
