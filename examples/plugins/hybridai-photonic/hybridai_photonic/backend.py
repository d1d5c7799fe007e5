"""The ``photonic`` backend family: a simulated photonic matrix multiplier for ``nn.Linear`` layers.

Targets are presets: ``photonic`` (= ``photonic:default``: 8-bit phases and converters, 0.1 dB
per MZI column, detector noise 1e-3 of full scale) and ``photonic:ideal`` (no quantisation,
no loss, no noise: exact and differentiable). Every field of ``PhotonicConfig`` is also an
option that overrides the preset: ``hybridai.place(model, classical="photonic", phase_bits=6)``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, fields, replace
from typing import Any

from hybridai.backends import Availability, Placement, PlacementCapabilities
from hybridai.core.errors import BackendNotFoundError, ConfigError, invalid, suggest


@dataclass(frozen=True)
class PhotonicEnergy:
    """Energy constants (joules, watts, hertz). The defaults are illustrative orders of magnitude,
    not measurements of any chip: give your own.

    dac_fom / adc_fom: Walden figure of merit, joules per conversion step (a b-bit conversion
        costs ``fom * 2**b``).
    laser_energy: optical energy per input waveguide per inference reaching the detector
        (the laser supplies it times the mesh loss, divided by ``wall_plug_efficiency``).
    heater_power: static power of one thermo-optic phase shifter holding its phase.
    symbol_rate: inferences per second per waveguide (heater power is spread over them).
    """

    dac_fom: float = 5e-14
    adc_fom: float = 5e-14
    laser_energy: float = 1e-14
    wall_plug_efficiency: float = 0.2
    heater_power: float = 5e-3
    symbol_rate: float = 1e10

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise invalid(f"energy.{f.name}", value, "a non-negative number")
        if self.symbol_rate <= 0 or not 0 < self.wall_plug_efficiency <= 1:
            raise invalid("energy", self, "symbol_rate > 0 and 0 < wall_plug_efficiency <= 1")


@dataclass(frozen=True)
class PhotonicConfig:
    """How the simulated chip realises a Linear layer.

    phase_bits: precision of every MZI phase (meshes and attenuators); None: exact phases.
    input_bits: DAC precision of the input modulators (inputs scaled by their max |x| per sample).
    adc_bits: ADC precision of the detected outputs (full scale = the optical input power).
    loss_db: insertion loss per MZI column, dB of optical power (compensated by the receiver gain,
        so it raises the detector noise and the laser energy).
    detector_noise: standard deviation of the additive detector noise, relative to full scale.
    max_modes: waveguides of the chip; a Linear with more inputs or outputs stays on torch.
    energy: the energy constants.
    """

    phase_bits: int | None = 8
    input_bits: int | None = 8
    adc_bits: int | None = 8
    loss_db: float = 0.1
    detector_noise: float = 1e-3
    max_modes: int = 64
    energy: PhotonicEnergy = field(default_factory=PhotonicEnergy)

    def __post_init__(self) -> None:
        for name in ("phase_bits", "input_bits", "adc_bits"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= 24):
                raise invalid(name, value, "None (exact) or an int from 2 to 24")
        for name in ("loss_db", "detector_noise"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise invalid(name, value, "a non-negative number")
        if isinstance(self.max_modes, bool) or not isinstance(self.max_modes, int) or self.max_modes < 1:
            raise invalid("max_modes", self.max_modes, "a positive int")
        if not isinstance(self.energy, PhotonicEnergy):
            raise invalid("energy", self.energy, "a hybridai_photonic.PhotonicEnergy")

    @property
    def ideal(self) -> bool:
        """No quantisation and no noise: the layer computes ``x @ W.T + b`` up to float64 rounding."""
        return self.phase_bits is None and self.input_bits is None and self.adc_bits is None and not self.detector_noise


PRESETS = {
    "default": PhotonicConfig(),
    "ideal": PhotonicConfig(phase_bits=None, input_bits=None, adc_bits=None, loss_db=0.0, detector_noise=0.0),
}
OPTIONS = tuple(f.name for f in fields(PhotonicConfig))


class PhotonicBackend(Placement):
    """Places eligible ``nn.Linear`` layers on a simulated photonic chip (``PhotonicLinear``).

    Options: every ``PhotonicConfig`` field, and ``seed`` (detector noise: each placed layer draws
    from its own generator, seeded from ``seed`` and the layer's weights when it first runs).
    The backend holds configuration only: one instance may place any number of models, from any
    number of threads; all state of a run (the noise generator) lives on the layers.
    """

    family = "photonic"  # the registry sets it again to the entry point's name
    domains = ("classical",)

    def __init__(self, target: str | None = None, *, seed: int | None = None, **options: Any) -> None:
        preset = target or "default"
        if preset not in PRESETS:
            raise BackendNotFoundError(
                f"backend='photonic:{preset}' is not a photonic preset; accepted: "
                f"{', '.join(repr(f'photonic:{p}') for p in PRESETS)}.{suggest(preset, PRESETS)}"
            )
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise ConfigError(
                f"backend='photonic' does not accept the option(s) {unknown}; accepted: seed, {', '.join(OPTIONS)}"
            )
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise invalid("seed", seed, "None or a non-negative int")
        self.config = replace(PRESETS[preset], **options)
        self.seed = seed
        super().__init__(target, **options, **({"seed": seed} if seed is not None else {}))

    @classmethod
    def is_available(cls) -> Availability:
        return Availability(True)  # pure torch and numpy: runs wherever hybridai does

    @property
    def capabilities(self) -> PlacementCapabilities:
        c = self.config
        return PlacementCapabilities(
            differentiable=c.ideal,
            exact=c.ideal,
            devices=("cpu",),
            extra={  # for people (hybridai never reads extra)
                "gradients": "exact" if c.ideal else "straight-through estimate (quantisers pass gradients unchanged)",
                "phase_bits": c.phase_bits,
                "input_bits": c.input_bits,
                "adc_bits": c.adc_bits,
                "max_modes": c.max_modes,
                "detector_noise": c.detector_noise,
            },
        )

    def place(self, module: Any) -> Any:
        """An ``nn.Linear`` that fits the chip becomes a ``PhotonicLinear`` (sharing its parameters);
        a ``PhotonicLinear`` is reprogrammed; every other module is returned unchanged (host CPU)."""
        from hybridai import HybridModule
        from torch import nn

        from .layer import PhotonicLinear

        if not isinstance(module, nn.Module):
            raise invalid("module", type(module).__name__, "a torch.nn.Module")
        if isinstance(module, PhotonicLinear):
            if module.resolved_backend is not self:
                module.set_backend(self)
            return module
        if isinstance(module, nn.Linear) and not isinstance(module, HybridModule):
            if max(module.in_features, module.out_features) > self.config.max_modes:
                warnings.warn(
                    f"Linear({module.in_features}, {module.out_features}) does not fit the "
                    f"{self.config.max_modes}-waveguide photonic chip (max_modes): it stays on torch",
                    stacklevel=3,
                )
                return module
            return PhotonicLinear.from_linear(module, backend=self)
        return module
