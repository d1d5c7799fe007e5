"""Hostile inputs to the neuromorphic entry points: ``hybridai.deploy``, the Loihi emulator and compiler,
fake-quantized training, Akida's quantizer and engine, nengo's compiler and the energy and MAC counters.

Every bad input must give a ``hybridai.HybridAIError`` whose message names the argument, shows the value and
says what is accepted: registers and exponents are ints in their ranges (never wrapped, never an overflow
inside torch), energy constants name the keys that are missing or unknown, and a NaN in a trained model is
refused where it would otherwise become a garbage register or input code.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import hybridai.neuromorphic.loihi.backend  # noqa: F401  (registers the "loihi" family)
import hybridai.neuromorphic.nengo.backend  # noqa: F401  (registers the "nengo" family)
from hybridai import CUBA, LIF, SpikeCountDecoder
from hybridai.core.errors import ConfigError, HybridAIError, ResourceLimitError, ShapeError
from hybridai.deployment import deploy
from hybridai.neuromorphic import akida, energy, loihi, nengo
from hybridai.neuromorphic.loihi import CompartmentConfig, LoihiLayer, check_weights, run_compartments, run_network
from hybridai.neuromorphic.macs import dense_macs

NAN, INF = float("nan"), float("inf")
HUGE = 10**400  # beyond float's range
UINT64 = getattr(torch, "uint64", None)
HAS_AKIDA = importlib.util.find_spec("akida") is not None
EVENTS = ("synaptic_op", "neuron_update_active", "neuron_update_inactive")


def snn(seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 5), LIF(0.85, reset="zero"), nn.Linear(5, 3), LIF(0.85, reset="zero"),
                         SpikeCountDecoder())  # fmt: skip


def ann(seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))


COUNTS = (torch.rand(6, 2, 4, generator=torch.Generator().manual_seed(1)) < 0.5).float()
CAL = torch.rand(8, 4, generator=torch.Generator().manual_seed(2))
W = torch.tensor([[2, -4, 0, 6], [0, 2, 2, -2], [8, 0, -2, 4]])  # even mantissas [3, 4]


def trained_to(layer: int, name: str, value: float, model: nn.Sequential | None = None) -> nn.Sequential:
    """``model`` (default ``snn()``) whose ``model[layer].<name>`` was trained to ``value`` (as a NaN can be)."""
    model = model if model is not None else snn()
    module = model[layer]
    if name in ("threshold", "beta", "alpha") and not isinstance(getattr(module, name), nn.Parameter):
        setattr(module, name, nn.Parameter(getattr(module, name).clone()))  # learnt: constructors refuse these
    with torch.no_grad():
        getattr(module, name).fill_(value)
    return model


def loihi_run(x):
    return loihi.compile(snn()).run(x)


def energy_with(event: str, value):
    constants = dict.fromkeys(EVENTS, 1e-12)
    constants[event] = value
    return deploy(snn(), "loihi", energy=constants)


# -- item 2: every register of CompartmentConfig, swept with a table of bad values ------------------


def register_cases() -> list[tuple]:
    cases = []
    for name, (low, high) in loihi.RANGES.items():
        bad = [
            (True, "True"),
            (np.bool_(False), "False"),
            (1.5, "1.5"),
            (float(low), f"{float(low)}"),
            (2**70, "1180591620717411303424"),
            (-(2**70), "-1180591620717411303424"),
            (HUGE, "1000000000000"),
            ("3", "'3'"),
            (None, "None"),
            (NAN, "nan"),
            (np.array([low]), "array"),
            (low - 1, str(low - 1)),
            (high + 1, str(high + 1)),
            (torch.tensor([low, high + 1]), f"range [{low}, {high + 1}]"),
            (torch.tensor([low - 5, high]), f"range [{low - 5}, {high}]"),
            (torch.tensor(1.0), "torch.float32"),
            (torch.tensor([True]), "torch.bool"),
            (torch.tensor([1 + 0j]), "complex"),
            (torch.zeros(0, dtype=torch.long), "shape (0,)"),
        ]
        if UINT64 is not None:
            bad.append((torch.tensor([2**63], dtype=UINT64), "9223372036854775808"))  # wraps to -2^63 in int64
        for value, shown in bad:
            cases.append((lambda v, n=name: CompartmentConfig(**{n: v}), value, ConfigError, name, shown))
        cases.append(
            (lambda v, n=name: CompartmentConfig(**{n: v}), torch.zeros(2, 2, dtype=torch.long), ShapeError,
             f"{name}.shape", "(2, 2)")
        )  # fmt: skip
    return cases


# -- item 2: the other ints of Loihi (weight exponents), Akida (bits) and nengo (widths, refractory steps) --

INT_BADS = [(True, "True"), (1.5, "1.5"), (2**70, "1180591620717411303424"), (HUGE, "1000000000000"),
            ("0", "'0'"), (None, "None"), (np.float64(1.0), "1.0")]  # fmt: skip


def int_option_cases() -> list[tuple]:
    cases = []
    for value, shown in [*INT_BADS, (-9, "-9"), (8, "8")]:
        cases += [
            (lambda v: LoihiLayer(W, v, CompartmentConfig()), value, ConfigError, "weight_exp", shown),
            (lambda v: check_weights(W, v), value, ConfigError, "weights weight_exp", shown),
            (lambda v: loihi.synaptic_input(COUNTS.long(), W, v, "nengo"), value, ConfigError, "weight_exp", shown),
        ]
    bits_bads = [*INT_BADS, (3, "3"), (16, "16"), (torch.tensor(8), "tensor(8)"), (np.array([8, 8]), "array"),
                 (torch.zeros(3, 2), "tensor")]  # fmt: skip
    for argument in ("input_bits", "activation_bits", "output_bits", "weight_bits"):
        for value, shown in bits_bads:
            cases.append(
                (lambda v, a=argument: akida.quantize(ann(), CAL, **{a: v}), value, ConfigError, argument, shown)
            )
    cases.append((lambda v: akida.quantize(ann(), CAL, weight_bits=v), 4, ConfigError, "weight_bits", "4"))
    for value, shown in [*INT_BADS[:5], (0, "0"), (-3, "-3"), (2**31, "2147483648")]:
        cases.append(
            (lambda v: nengo.compile(nn.Sequential(LIF(reset="zero")), n_inputs=v), value, ConfigError, "n_inputs",
             shown)
        )  # fmt: skip
    for value, shown in [(True, "True"), (HUGE, "1000000000000"), (-1, "-1"), (NAN, "nan"), (INF, "inf"),
                         ("1.5", "'1.5'"), (None, "None")]:  # fmt: skip
        cases += [
            (lambda v: nengo.compile(snn(), cuba_refractory_steps=v), value, ConfigError, "cuba_refractory_steps",
             shown),
            (lambda v: deploy(snn(), "nengo", cuba_refractory_steps=v), value, ConfigError, "cuba_refractory_steps",
             shown),
        ]  # fmt: skip
    return cases


# -- item 4: the public entry points, swept ----------------------------------------------------------

ENTRY_CASES = [
    # Loihi synapses and layers
    (lambda v: LoihiLayer(v, 0, CompartmentConfig()), torch.full((3, 4), 0.5), ShapeError, "weights", "0.5"),
    (lambda v: LoihiLayer(v, 0, CompartmentConfig()), torch.zeros(4, dtype=torch.long), ShapeError, "weights.shape",
     "(4,)"),
    (lambda v: LoihiLayer(v, 0, CompartmentConfig()), [[2, 4]], ShapeError, "weights", "list"),
    (lambda v: LoihiLayer(v, 0, CompartmentConfig()), torch.full((3, 4), 1e30), ShapeError, "weights", "1e+30"),
    (lambda v: LoihiLayer(W, 0, v), {"du": 1}, ConfigError, "config", "dict"),
    (lambda v: LoihiLayer(W, 0, CompartmentConfig(), name=v), 3, ConfigError, "name", "3"),
    (lambda v: check_weights(v, 0), W + 1, ConfigError, "weights", "odd value"),
    (lambda v: check_weights(v, 0), W * 100, ConfigError, "weights", "range [-400, 800]"),
    (lambda v: check_weights(W * 60, 0, v), "lava", ConfigError, "weights", "range [-240, 480]"),
    (lambda v: check_weights(W, 0, v), np.array(["nengo"]), ConfigError, "quirks", "array"),
    (lambda v: check_weights(W, 0, v), None, ConfigError, "quirks", "None"),
    (lambda v: loihi.synaptic_input(v, W, 0, "nengo"), torch.zeros(6, 2, 5, dtype=torch.long), ShapeError,
     "counts.shape", "(6, 2, 5)"),
    (lambda v: loihi.synaptic_input(v, W, 0, "nengo"), torch.full((6, 2, 4), 0.5), ShapeError, "counts", "0.5"),
    (lambda v: run_network(v, COUNTS), None, ConfigError, "layers", "None"),
    (lambda v: run_network(v, COUNTS), 5, ConfigError, "layers", "5"),
    (lambda v: run_network(v, COUNTS), [], ConfigError, "layers", "empty list"),
    (lambda v: run_network(v, COUNTS), [object()], ConfigError, "layers[0]", "object"),
    (lambda v: run_network([LoihiLayer(W, 0, CompartmentConfig())], v), torch.full((6, 2, 4), 0.5), ShapeError, "x",
     "0.5"),
    (lambda v: run_network([LoihiLayer(W, 0, CompartmentConfig())], v), -COUNTS - 1, ShapeError, "x", "minimum -2"),
    (lambda v: run_network([LoihiLayer(W, 0, CompartmentConfig())], v), torch.full((6, 2, 4), 1e30), ShapeError, "x",
     "1e+30"),
    (lambda v: run_network([LoihiLayer(W, 0, CompartmentConfig())], v), torch.full((6, 2, 4), NAN), ShapeError, "x",
     "nan"),
    (lambda v: run_network([LoihiLayer(W, 0, CompartmentConfig())], v), COUNTS[0], ShapeError, "x.shape", "(2, 4)"),
    (lambda v: run_network([LoihiLayer(W, 0, CompartmentConfig())], v), COUNTS[:, :, :3], ShapeError, "x.shape",
     "(6, 2, 3)"),
    (lambda v: run_network([LoihiLayer(W, 0, CompartmentConfig())], v), COUNTS.to(torch.complex64), ShapeError,
     "x.dtype", "complex64"),
    (lambda v: run_network([LoihiLayer(W, 0, CompartmentConfig())], COUNTS, v), "truenorth", ConfigError, "quirks",
     "'truenorth'"),
    (lambda v: run_network([LoihiLayer(W, 0, CompartmentConfig())], COUNTS, v), np.zeros(2), ConfigError, "quirks",
     "array"),
    (lambda v: run_network([LoihiLayer(W, 0, CompartmentConfig())], COUNTS, record=v), "v", ConfigError, "record",
     "'v'"),
    (lambda v: run_network([LoihiLayer(W, 0, CompartmentConfig())], COUNTS, record=v), ("u",), ConfigError, "record",
     "('u',)"),
    (lambda v: run_compartments(v, COUNTS.long()), {"du": 1}, ConfigError, "config", "dict"),
    (lambda v: run_compartments(CompartmentConfig(), v), COUNTS, ShapeError, "q.dtype", "float32"),
    (lambda v: run_compartments(CompartmentConfig(), v), torch.full((3, 2, 4), 2**62), ShapeError, "q", "2^52"),
    (lambda v: run_compartments(CompartmentConfig(), v), [1, 2], ShapeError, "q", "list"),
    (lambda v: run_compartments(CompartmentConfig(), COUNTS.long(), v), 3, ConfigError, "quirks", "3"),
    (lambda v: run_compartments(CompartmentConfig(du=torch.tensor([1, 2])), v), COUNTS.long(), ShapeError,
     "du.shape", "(2,)"),
    # Loihi quantization and its network
    (lambda v: loihi.compile(v), "model.pt", ConfigError, "model", "str"),
    (lambda v: loihi.compile(v), nn.Linear(4, 3), ConfigError, "model", "Linear"),
    (lambda v: loihi.compile(snn(), quirks=v), np.array(["nengo"]), ConfigError, "quirks", "array"),
    (lambda v: loihi.compile(snn(), calibration=v), torch.full((6, 2, 4), 0.5), ShapeError, "calibration", "0.5"),
    (lambda v: loihi.compile(snn(), calibration=v), -COUNTS, ShapeError, "calibration", "minimum -1"),
    (lambda v: loihi.compile(snn(), calibration=v), [1, 2], ShapeError, "calibration", "list"),
    (lambda v: loihi.compile(snn(), device=v), "tpu", ConfigError, "device", "'tpu'"),
    (lambda v: loihi.compile(snn(), device=v), None, ConfigError, "device", "None"),
    (lambda v: loihi.compile(trained_to(0, "weight", v)), NAN, ConfigError, "weight", "NaN"),
    (lambda v: loihi.compile(trained_to(0, "weight", v)), INF, ConfigError, "weight", "inf"),
    (lambda v: loihi.compile(trained_to(2, "bias", v)), NAN, ConfigError, "bias", "NaN"),
    (lambda v: loihi.compile(trained_to(1, "beta", v)), NAN, ConfigError, "beta", "NaN"),
    (lambda v: loihi.compile(trained_to(3, "threshold", v)), NAN, ConfigError, "threshold", "NaN"),
    (lambda v: loihi.compile(trained_to(3, "threshold", v)), 0.0, ConfigError, "threshold", "0.0"),
    (lambda v: loihi.compile(trained_to(1, "threshold", v)), -2.0, ConfigError, "threshold", "-2.0"),
    (lambda v: loihi.compile(trained_to(1, "alpha", v, nn.Sequential(nn.Linear(4, 3, bias=False), CUBA(
        reset="zero")))), NAN, ConfigError, "alpha", "NaN"),
    (loihi_run, COUNTS[:, :, :3], ShapeError, "x.shape", "(6, 2, 3)"),
    (loihi_run, COUNTS[0], ShapeError, "x.shape", "(2, 4)"),
    (loihi_run, None, ShapeError, "x.shape", "NoneType"),
    (loihi_run, COUNTS * 0.5, ShapeError, "x", "0.5"),
    (loihi_run, COUNTS - 1, ShapeError, "x", "minimum -1"),
    (loihi_run, torch.full((6, 2, 4), 2.0**40), ShapeError, "x", "1099511627776"),
    # fake-quantized training
    (lambda v: loihi.fake_quantize(v), None, ConfigError, "model", "NoneType"),
    (lambda v: loihi.fake_quantize(snn(), quirks=v), None, ConfigError, "quirks", "None"),
    (lambda v: loihi.fake_quantize(snn(), calibration=v), COUNTS * 0.5, ShapeError, "calibration", "0.5"),
    (lambda v: loihi.fake_quantize(snn())(v), COUNTS * 0.5, ShapeError, "x", "0.5"),
    (lambda v: loihi.fake_quantize(snn())(v), COUNTS[:, :, :3], ShapeError, "x.shape", "(6, 2, 3)"),
    (lambda v: loihi.fake_quantize(snn())(v), torch.full((6, 2, 4), 2.0**60), ShapeError, "x", "1152921504606846976"),
    (lambda v: loihi.fake_quantize(trained_to(0, "weight", v))(COUNTS), NAN, ConfigError, "weight", "NaN"),
    # hybridai.deploy and its Deployment
    (lambda v: deploy(v, "loihi"), "model.pt", ConfigError, "model", "str"),
    (lambda v: deploy(snn(), v), 3, ConfigError, "backend", "3"),
    (lambda v: deploy(snn(), v), "torch", ConfigError, "backend", "'torch'"),
    (lambda v: deploy(snn(), v), "loihi:board", ConfigError, "backend", "'loihi:board'"),
    (lambda v: deploy(snn(), "loihi", quirks=v), np.zeros(2), ConfigError, "quirks", "array"),
    (lambda v: deploy(snn(), "loihi", device=v), 3, ConfigError, "device", "3"),
    (lambda v: deploy(snn(), "loihi", calibration=v), COUNTS * 0.5, ShapeError, "calibration", "0.5"),
    (lambda v: deploy(snn(), "loihi", energy=v), [1e-12] * 3, ConfigError, "energy", "[1e-12"),
    (lambda v: deploy(snn(), "loihi", energy=v), {}, ConfigError, "energy", "missing ['synaptic_op'"),
    (lambda v: energy_with("synaptic_op", v), NAN, ConfigError, "energy['synaptic_op']", "nan"),
    (lambda v: energy_with("synaptic_op", v), -1e-12, ConfigError, "energy['synaptic_op']", "-1e-12"),
    (lambda v: energy_with("synaptic_op", v), INF, ConfigError, "energy['synaptic_op']", "inf"),
    (lambda v: energy_with("neuron_update_active", v), HUGE, ConfigError, "energy['neuron_update_active']", "1000"),
    (lambda v: energy_with("neuron_update_active", v), True, ConfigError, "energy['neuron_update_active']", "True"),
    (lambda v: energy_with("neuron_update_inactive", v), "1pJ", ConfigError, "energy['neuron_update_inactive']",
     "'1pJ'"),
    (lambda v: energy_with("neuron_update_inactive", v), (1e-12, 7), ConfigError, "energy['neuron_update_inactive']",
     "(1e-12, 7)"),
    (lambda v: energy_with("synaptic_op", v), (NAN, "bench"), ConfigError, "energy['synaptic_op']", "nan"),
    (lambda v: deploy(snn(), "loihi").run(v), COUNTS * 0.5, ShapeError, "x", "0.5"),
    (lambda v: deploy(snn(), "loihi").report(v), [[1.0]], ShapeError, "x.shape", "list"),
    (lambda v: deploy(snn(), "loihi").report(COUNTS, v), torch.tensor([0, 3]), ConfigError, "labels", "range [0, 3]"),
    (lambda v: deploy(snn(), "loihi").report(COUNTS, v), torch.tensor([-1, 0]), ConfigError, "labels", "[-1, 0]"),
    (lambda v: deploy(snn(), "loihi").report(COUNTS, v), torch.tensor([0.5, 1.0]), ConfigError, "labels",
     "non-integer"),
    (lambda v: deploy(snn(), "loihi").report(COUNTS, v), torch.tensor([NAN, 1.0]), ConfigError, "labels",
     "non-integer"),
    (lambda v: deploy(snn(), "loihi").report(COUNTS, v), torch.tensor([INF, 1.0]), ConfigError, "labels", "inf"),
    (lambda v: deploy(snn(), "loihi").report(COUNTS, v), torch.tensor([True, False]), ConfigError, "labels.dtype",
     "torch.bool"),
    (lambda v: deploy(snn(), "loihi").report(COUNTS, v), torch.zeros(3, dtype=torch.long), ConfigError,
     "labels.shape", "(3,)"),
    (lambda v: deploy(snn(), "loihi").report(COUNTS, v), [2**70, 0], ConfigError, "labels", "1180591620717411303424"),
    (lambda v: deploy(snn(), "loihi").report(COUNTS, v), ["a", "b"], ConfigError, "labels", "['a', 'b']"),
    (lambda v: deploy(snn(), "loihi").report(COUNTS, v), [[0], [1]], ConfigError, "labels", "[[0], [1]]"),
    (lambda v: deploy(snn(), "loihi").report(COUNTS, v), "01", ConfigError, "labels", "str"),
    (lambda v: deploy(snn(), "loihi").report(COUNTS, v), object(), ConfigError, "labels", "object"),
    (lambda v: deploy(snn()[:4], "loihi").report(COUNTS, v), torch.zeros(2, dtype=torch.long), ConfigError, "labels",
     "[B, classes]"),
    # nengo
    (lambda v: nengo.compile(v), "model", ConfigError, "model", "str"),
    (lambda v: nengo.compile(trained_to(0, "weight", v)), NAN, ConfigError, "weight", "NaN"),
    (lambda v: nengo.compile(trained_to(2, "bias", v)), INF, ConfigError, "bias", "NaN or inf"),
    (lambda v: nengo.compile(trained_to(1, "beta", v)), NAN, ConfigError, "beta", "NaN"),
    (lambda v: nengo.compile(trained_to(1, "threshold", v)), -1.0, ConfigError, "threshold", "-1.0"),
    (lambda v: deploy(snn(), "nengo").run(v), COUNTS.long(), ShapeError, "x.dtype", "torch.int64"),
    (lambda v: deploy(snn(), "nengo").run(v), torch.full((6, 2, 4), NAN), ConfigError, "x", "NaN"),
    (lambda v: deploy(snn(), "nengo").run(v), COUNTS[:, :, :3], ShapeError, "x.shape", "(6, 2, 3)"),
    (lambda v: deploy(snn(), "nengo").report(COUNTS, v), ["0", "1"], ConfigError, "labels", "['0', '1']"),
    # Akida quantization (plain torch: no akida package needed)
    (lambda v: akida.quantize(v, CAL), "model", ConfigError, "model", "str"),
    (lambda v: akida.quantize(ann(), v), torch.full((8, 4), NAN), ConfigError, "calibration", "NaN"),
    (lambda v: akida.quantize(ann(), v), torch.full((8, 4), INF), ConfigError, "calibration", "inf"),
    (lambda v: akida.quantize(ann(), v), torch.ones(8, 4, dtype=torch.long), ConfigError, "calibration", "Tensor"),
    (lambda v: akida.quantize(ann(), v), [[0.0] * 4], ConfigError, "calibration", "list"),
    (lambda v: akida.quantize(ann(), v), torch.zeros(0, 4), ShapeError, "calibration", "(0, 4)"),
    (lambda v: akida.quantize(ann(), v), torch.zeros(2, 3, 4), ShapeError, "calibration", "(2, 3, 4)"),
    (lambda v: akida.quantize(trained_to(0, "weight", v, ann()), CAL), NAN, ConfigError, "weight", "NaN"),
    (lambda v: akida.quantize(trained_to(2, "bias", v, ann()), CAL), -INF, ConfigError, "bias", "inf"),
    (lambda v: akida.quantize(ann(), -CAL, input_bits=v), 4, ConfigError, "input_bits", "4"),
    (lambda v: akida.quantize_input(akida.quantize(ann(), CAL), v), torch.full((2, 4), NAN), ShapeError, "x", "NaN"),
    (lambda v: akida.quantize_input(akida.quantize(ann(), CAL), v), torch.zeros(0, 4), ShapeError, "x", "(0, 4)"),
    (lambda v: akida.quantize_input(akida.quantize(ann(), CAL), v), torch.zeros(2, 5), ShapeError, "x", "(2, 5)"),
    (lambda v: akida.quantize_input(akida.quantize(ann(), CAL), v), [[0.0] * 4], ShapeError, "x", "list"),
    (lambda v: akida.quantize_input(akida.quantize(ann(), CAL), v), torch.zeros(2, 4, dtype=torch.complex64),
     ShapeError, "x", "complex"),
    # MACs of the dense baseline
    (lambda v: dense_macs(ann(), v), (2**40,), ResourceLimitError, "input_shape", "(1099511627776,)"),
    (lambda v: dense_macs(ann(), v), (HUGE,), ResourceLimitError, "input_shape", "(1000000"),
    (lambda v: dense_macs(ann(), v), (0,), ConfigError, "input_shape[0]", "0"),
    (lambda v: dense_macs(ann(), v), (4.0,), ConfigError, "input_shape[0]", "4.0"),
    (lambda v: dense_macs(ann(), v), "4", ConfigError, "input_shape", "'4'"),
    (lambda v: dense_macs(ann(), v), (5,), ShapeError, "input_shape", "(5,)"),
    (lambda v: dense_macs(v, (4,)), None, ConfigError, "model", "NoneType"),
]  # fmt: skip

AKIDA_CASES = [
    (lambda v: deploy(ann(), "akida", calibration=CAL, input_bits=v), torch.tensor(8), ConfigError, "input_bits",
     "tensor(8)"),
    (lambda v: deploy(ann(), "akida", calibration=CAL, output_bits=v), np.array([8]), ConfigError, "output_bits",
     "array"),
    (lambda v: deploy(ann(), "akida", calibration=v), torch.full((8, 4), NAN), ConfigError, "calibration", "NaN"),
    (lambda v: deploy(ann(), "akida", calibration=v), None, ConfigError, "calibration", "None"),
    (lambda v: deploy(ann(), "akida", calibration=CAL).run(v), torch.full((2, 4), NAN), ShapeError, "x", "NaN"),
    (lambda v: deploy(ann(), "akida", calibration=CAL).run(v), torch.zeros(2, 5), ShapeError, "x", "(2, 5)"),
    (lambda v: deploy(ann(), "akida", calibration=CAL).report(CAL, v), [2**70] * 8, ConfigError, "labels",
     "1180591620717411303424"),
    (lambda v: deploy(ann(), "akida", calibration=CAL).report(CAL, v), torch.zeros(8) + 0.5, ConfigError, "labels",
     "non-integer"),
]  # fmt: skip

if UINT64 is not None:  # int64 conversion once wrapped 2^63 to -2^63
    ENTRY_CASES.append(
        (lambda v: run_network([LoihiLayer(W, 0, CompartmentConfig())], v), torch.full((6, 2, 4), 2**63, dtype=UINT64),
         ShapeError, "x", "9.223e+18")
    )  # fmt: skip

CASES = register_cases() + int_option_cases() + ENTRY_CASES


def _id(case) -> str:
    _, value, _, argument, _ = case
    text = str(value).replace("\n", " ")
    return f"{argument}={text[:24]}"


def _check(call, value, error, argument, shown) -> None:
    with pytest.raises(HybridAIError) as caught:
        call(value)
    assert isinstance(caught.value, error), f"{type(caught.value).__name__}: {caught.value}"
    message = str(caught.value)
    assert argument in message and shown in message, message
    assert "accepted" in message, message


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("call, value, error, argument, shown", CASES, ids=[_id(c) for c in CASES])
def test_bad_input_gives_a_typed_error_naming_argument_value_and_accepted(call, value, error, argument, shown):
    _check(call, value, error, argument, shown)


@pytest.mark.skipif(not HAS_AKIDA, reason="the akida package is not installed (pip install 'hybridai[akida]')")
@pytest.mark.parametrize("call, value, error, argument, shown", AKIDA_CASES, ids=[_id(c) for c in AKIDA_CASES])
def test_bad_input_to_akida_deployments_gives_a_typed_error(call, value, error, argument, shown):
    _check(call, value, error, argument, shown)


# -- item 3: energy constants name the keys that are missing and the ones that are unknown ---------


@pytest.mark.parametrize(
    "constants, missing, unknown",
    [
        ({"synaptic_op": 1e-12}, ["neuron_update_active", "neuron_update_inactive"], []),
        ({}, list(EVENTS), []),
        ({**dict.fromkeys(EVENTS, 1e-12), "spikes": 1e-12}, [], ["spikes"]),
        ({"synaptic_ops": 1e-12, "neuron_update_active": 1e-12, "neuron_update_inactive": 1e-12},
         ["synaptic_op"], ["synaptic_ops"]),
        ({**dict.fromkeys(EVENTS[1:], 1e-12), 7: 1e-12}, ["synaptic_op"], [7]),
    ],
)  # fmt: skip
def test_energy_names_the_missing_and_the_unknown_keys(constants, missing, unknown):
    with pytest.raises(ConfigError) as caught:
        deploy(snn(), "loihi", energy=constants)
    message = str(caught.value)
    assert "got extra []" not in message  # the message item 3 was about
    assert (f"missing {missing}" in message) == bool(missing), message
    assert (f"unknown {unknown}" in message) == bool(unknown), message
    assert message.startswith("energy=") and "accepted: keys" in message


KEYS = st.sampled_from([*EVENTS, "spike", "spikes", "synaptic_ops", "joules"])


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(KEYS, st.one_of(st.floats(0, 1e-9), st.just(NAN), st.just(-1.0)), max_size=6))
def test_energy_constants_either_price_or_name_each_wrong_key_and_value(constants):
    missing = [e for e in EVENTS if e not in constants]
    unknown = sorted(k for k in constants if k not in (*EVENTS, "spike"))
    bad_values = [k for k, v in constants.items() if not v >= 0]  # NaN and -1.0
    try:
        model = energy.energy_model("loihi", constants)
    except ConfigError as exc:
        message = str(exc)
        if missing or unknown:  # keys first: each missing and each unknown one named
            assert message.startswith("energy=") and (f"missing {missing}" in message) == bool(missing), message
            assert (f"unknown {unknown}" in message) == bool(unknown), message
        else:
            assert bad_values and message.startswith(f"energy[{bad_values[0]!r}]="), message
        return
    assert not (missing or unknown or bad_values)
    assert {e for e, _ in model.constants()} == set(constants)
    assert all(c.joules == constants[e] for e, c in model.constants())


# -- right answers for inputs that are accepted ----------------------------------------------------


def test_registers_are_taken_from_any_integer_type_unchanged():
    reference = CompartmentConfig(du=5, dv=7, vth_mant=100, bias_mant=-3, refractory=2)
    numpy_ints = CompartmentConfig(du=np.int64(5), dv=np.int32(7), vth_mant=np.uint16(100), bias_mant=np.int8(-3),
                                   refractory=torch.tensor(2, dtype=torch.uint8))  # fmt: skip
    for name in loihi.RANGES:
        got, want = getattr(numpy_ints, name), getattr(reference, name)
        assert got.dtype == torch.int64 and torch.equal(got, want), name
    q = torch.randint(0, 2000, (8, 2, 3), generator=torch.Generator().manual_seed(0))
    assert torch.equal(run_compartments(numpy_ints, q).v, run_compartments(reference, q).v)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(loihi.RANGES)), value=st.one_of(st.integers(-(2**80), 2**80), st.integers(-9, 70)))
def test_a_register_is_either_stored_exactly_or_refused_by_name(name, value):
    low, high = loihi.RANGES[name]
    try:
        config = CompartmentConfig(**{name: value})
    except ConfigError as exc:
        assert not low <= value <= high
        assert str(exc).startswith(f"{name}={value} is not valid; accepted:") and f"[{low}, {high}]" in str(exc)
        return
    assert low <= value <= high and int(getattr(config, name)) == value


def test_a_report_on_integer_counts_equals_the_report_on_float_counts():
    deployment = deploy(snn(), "loihi")
    labels = snn()(COUNTS).argmax(1)
    as_float = deployment.report(COUNTS, labels)
    for x in (COUNTS.long(), COUNTS.bool(), COUNTS.half()):
        assert deployment.report(x, labels).agreement == as_float.agreement
    for same in (labels.tolist(), tuple(labels.tolist()), labels.numpy(), labels.double()):
        assert deployment.report(COUNTS, same).agreement == as_float.agreement
    assert as_float.agreement["accuracy, float model"] == 1.0


def test_loihi_layers_take_whole_float_mantissas_as_the_integers_they_hold():
    config = CompartmentConfig(vth_mant=3)
    counts = (torch.rand(10, 2, 4, generator=torch.Generator().manual_seed(3)) < 0.5).long()
    as_int = run_network([LoihiLayer(W, 1, config)], counts)[0]
    as_float = run_network([LoihiLayer(W.double(), np.int64(1), config)], counts)[0]
    assert torch.equal(as_int.spikes, as_float.spikes) and torch.equal(as_int.v, as_float.v)
    assert as_int.spikes.any()  # the comparison is not between two silent layers
