"""A trained sigma-delta network as a lava-dl "netx" HDF5 file, and the messages Lava computes on it.

Intel's path to a Loihi 2 board is Lava, which loads trained networks from lava-dl's netx files
(``lava.lib.dl.netx.hdf5.Network``). ``export_netx(model, path, example=x)`` writes the chip layers of a model
that ``hybridai.neuromorphic.loihi2.compile`` accepts and returns ``NetxExport``: the integer messages of the
example that enter the file's first layer (``.input``, ``[T, *input_shape]``) and what a Lava sink on the
network's output port receives over the same T steps (``.output``), computed here with the integer rules that
Lava's fixed-point CPU models define (``sigma_delta``, ``graded_dense``).

What netx builds from a file (lava-dl 0.6, ``netx/hdf5.py``, ``netx/utils.py``, ``netx/blocks``), and so what
the file holds:

* a ``dense`` layer is a Dense synapse and a group of neurons. The weights are integers; netx re-derives their
  exponent and width from the values (``optimize_weight_bits``), so the synapse computes ``W @ messages``
  exactly, one step later (Dense's buffer). It takes no exponent from the file: a sum cannot be floored there;
* an ``SDNN`` neuron is Lava's ``SigmaDelta`` with ``state_exp = 6`` and ``spike_exp = 6`` (netx's default):
  its threshold and bias registers are the file's ``vThMant`` and ``bias`` times 2^12, its state keeps 12 bits
  below them and its messages 6 (``>> state_exp``); ReLU, the residue carried (``cum_error=False``); messages
  of 16 bits. With ``sigma_output`` it is Lava's ``Sigma``: it sends its running sum every step;
* the network's input enters the first Dense (``Network(net_config=path, input_shape=(F,),
  input_message_bits=24)``); netx's own input layer takes input only through a bias.

So each SigmaDelta of grid ``s`` keeps hybridai's registers (``vThMant`` = its threshold steps, ``bias`` its
integer bias, both in units of ``s``) and its state and messages gain netx's fraction bits: state in units of
``s / 4096``, messages in units of ``s / 64``; a Dense between grids ``s_in`` and ``s`` holds hybridai's mantissas
``m 2^e`` times 64 (rounded where ``e < -6``). The input SigmaDelta runs on the host, as on the emulator; its
messages times ``2^k`` are ``.input``, with ``k = max(0, e + 12)`` for the first Dense, which so holds exactly
hybridai's mantissas (``e >= -12``). A read-out Linear (and the decoder) run on the host too:
``NetxExport.host.decode(output)`` applies them to the output messages (a Sigma group's 16-bit running sums
could not hold them). The numbers differ from hybridai's own Loihi 2 plan where it floors each step's synaptic
sum to the grid (``weight_exp < 0``), which a netx file cannot express; they are Lava's own, message for message.
Refused by name, before a file is written: convolutions (not written yet), thresholds per neuron, weights beyond
254 in netx's units, all-zero weights (netx divides by the largest), registers beyond int32, and examples whose
messages or states leave netx's widths.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import nn

from hybridai.core.errors import ConfigError, ShapeError, invalid
from hybridai.neuromorphic.loihi2.graded_dense import graded_sums
from hybridai.neuromorphic.loihi2.plan import StagePlan, chip_weight, plan
from hybridai.neuromorphic.loihi2.sigma_delta import SigmaDeltaConfig, run_sigma_delta

__all__ = ["HostReadout", "NetxExport", "NetxLayer", "NetxPlan", "export_netx", "netx_layers", "run_netx"]

FRACTION_BITS = 6  # netx's state_exp: bits a message keeps below the layer's grid
REGISTER_SHIFT = 12  # spike_exp + state_exp: vThMant and bias are shifted left by this much
MESSAGE_BITS = 16  # netx's messages of SDNN and Sigma neurons (num_message_bits default)
INPUT_MESSAGE_BITS = 24  # the input messages: Network(..., input_message_bits=24)
WEIGHT_LIMIT = 254  # the largest magnitude netx's weight optimisation keeps exactly in every sign mode


@dataclass(frozen=True)
class NetxLayer:
    """One layer of the file: a Dense of integer ``weights`` ``[N, F]`` into SDNN neurons, ``vth`` and ``bias`` as
    the file holds them (the registers are these times 2^12); ``grid``: the float value of one unit of its
    messages."""

    name: str
    weights: torch.Tensor
    vth: int
    bias: torch.Tensor
    grid: float

    @property
    def config(self) -> SigmaDeltaConfig:
        """The sigma-delta registers Lava builds for the layer (``SigmaDelta(vth, bias, state_exp=6,
        spike_exp=6)``)."""
        shift = 2**REGISTER_SHIFT
        bias = int(self.bias[0]) if bool((self.bias == self.bias[0]).all()) else self.bias
        return SigmaDeltaConfig(vth=self.vth * shift, bias=bias * shift, state_exp=FRACTION_BITS)


class NetxExport(NamedTuple):
    """What ``export_netx`` wrote and computed: the file, the example's integer messages into the first layer
    (``input``, ``[T, F]`` int64) and on the output port (``output``, ``[T, N]`` int64, pipeline delay included),
    the float value of one output unit (``output_grid``), the layers written and what the host does with the
    output (``host``: the read-out and decoder, ``host.decode(output)``)."""

    path: Path
    input: torch.Tensor
    output: torch.Tensor
    output_grid: float
    layers: list[NetxLayer]
    host: HostReadout


@dataclass(frozen=True)
class HostReadout:
    """What the host computes from the network's output messages: the model's read-out Linear with the weights
    hybridai's chip holds (``weight``, float64 ``[C, N]``; None without a read-out) and its decoder (None
    without)."""

    grid: float  # float value of one output unit
    weight: torch.Tensor | None
    decoder: nn.Module | None

    def decode(self, output: Any) -> torch.Tensor:
        """The model's output for the network's ``output`` messages ``[T, N]`` or ``[T, B, N]`` (float64)."""
        values = torch.as_tensor(output).double() * self.grid
        one = values.ndim == 2
        values = values.unsqueeze(1) if one else values  # [T, B, N], as the decoder takes it
        if self.weight is not None:
            values = values @ self.weight.to(values.device).T
        if self.decoder is not None:
            values = self.decoder(values)
            return values[0] if one else values
        return values[:, 0] if one else values


class NetxPlan(NamedTuple):
    """The host's input layer (hybridai's registers), the file's layers, what the host computes from their output,
    the input width (None: any) and the shift of the input messages."""

    first: StagePlan
    layers: list[NetxLayer]
    host: HostReadout
    width: int | None
    input_shift: int  # the input messages are the input layer's times 2^input_shift


def netx_layers(model: Any) -> NetxPlan:
    """The netx layers of ``model`` (module docstring), or a ConfigError naming what netx cannot express."""
    planned = plan(model)
    first, *stages = planned.stages
    if not stages:
        raise invalid("model", "a SigmaDelta input layer alone", "an input layer, then Linear and SigmaDelta layers")
    readout = stages.pop() if stages[-1].config is None else None
    if not stages:
        raise invalid("model", "an input layer and a read-out", "an input layer, then Linear and SigmaDelta layers")
    layers: list[NetxLayer] = []
    input_shift = max(0, stages[0].weight_exp + REGISTER_SHIFT)  # the first Dense keeps hybridai's mantissas
    for stage in stages:
        if stage.conv is not None:
            accepted = "nn.Linear synapses (export_netx writes netx 'dense' layers; convolutions are not written yet)"
            raise invalid(f"{stage.name} (a Conv2d in front)", "a convolution", accepted)
        assert stage.weights is not None and stage.config is not None  # synapses into sigma-delta neurons
        fraction = REGISTER_SHIFT - input_shift if not layers else FRACTION_BITS  # bits the incoming messages lack
        scaled = stage.weights.double() * 2.0 ** (stage.weight_exp + fraction)
        weights = torch.round(scaled).long()
        _check_weights(stage.name, weights)
        vth = _register(f"{stage.name}.threshold", stage.config.vth, scalar=True)
        bias = torch.as_tensor(stage.config.bias, dtype=torch.int64).expand(weights.shape[0]).clone()
        _register(f"{stage.name}.bias", bias, scalar=False)
        layers.append(NetxLayer(stage.name, weights, vth, bias, stage.grid / 2**FRACTION_BITS))
    weight = None if readout is None else chip_weight(readout, stages[-1].grid)
    host = HostReadout(layers[-1].grid, weight, planned.decoder)
    return NetxPlan(first, layers, host, planned.width, input_shift)


def _register(name: str, value: Any, scalar: bool) -> int:
    """``value`` as the file's register (an int when ``scalar``), refused where netx's ``<< 12`` leaves int32."""
    tensor = torch.as_tensor(value, dtype=torch.int64)
    if scalar and tensor.numel() != 1:
        raise invalid(name, f"{tensor.numel()} values (one per neuron)", "one value per layer (netx's vThMant)")
    largest = int(tensor.abs().max()) if tensor.numel() else 0
    if largest >= 2 ** (31 - REGISTER_SHIFT):
        accepted = (
            f"below {2 ** (31 - REGISTER_SHIFT)} steps of the layer's grid (Lava shifts it by 12 bits into int32)"
        )
        raise invalid(name, largest, accepted)
    return int(tensor.reshape(-1)[0]) if scalar else largest


def _check_weights(name: str, weights: torch.Tensor) -> None:
    largest = int(weights.abs().max()) if weights.numel() else 0
    if largest == 0:
        raise invalid(f"{name} weights", "all zero", "at least one non-zero weight (netx scales by the largest)")
    if largest > WEIGHT_LIMIT:
        accepted = (
            f"magnitudes up to {WEIGHT_LIMIT} in units of 1/64 of the layer's grid ratio (train with smaller weights "
            "or a finer scale on the SigmaDelta before, a coarser one on this)"
        )
        raise invalid(f"{name} weights", f"up to {largest} in netx's units", accepted)


def run_netx(layers: list[NetxLayer], messages: Any, *, check: bool = False) -> torch.Tensor:
    """What Lava's fixed-point models send on the output port of the network ``layers`` for the input
    ``messages`` ``[T, B, F]`` (integers), ``[T, B, N]`` int64: each Dense delivers one step later (sums wrapped
    to int32 as Lava's), SDNN groups follow ``run_sigma_delta``. ``check``: refuse
    (ConfigError) a run whose states could leave int32 or whose messages leave netx's 16 bits."""
    current = torch.as_tensor(messages).long()
    for layer in layers:
        sums = torch.zeros(*current.shape[:2], layer.weights.shape[0], dtype=torch.int64, device=current.device)
        sums[1:] = graded_sums(layer.weights.to(current.device), current[:-1], 0)
        if check:
            registers = 2**REGISTER_SHIFT * (int(layer.bias.abs().max()) + layer.vth)
            _check_bound(f"{layer.name}'s state", float(sums.abs().sum(0, dtype=torch.float64).max()) + registers)
        current = run_sigma_delta(layer.config, sums).messages
        if check:
            _check_width(f"{layer.name}'s messages", current, MESSAGE_BITS)
    return current


def _check_bound(what: str, bound: float) -> None:
    if bound >= 2**31:
        raise ConfigError(
            f"{what} could reach {bound:.4g} for this example; accepted: below 2^31 (Lava's int32 registers hold it "
            "with 12 bits below the grid): a coarser grid (SigmaDelta scale) or a shorter example"
        )


def export_netx(model: Any, path: str | os.PathLike[str], *, example: Any) -> NetxExport:
    """Write ``model``'s chip layers to the netx file ``path`` and return the example's messages (module
    docstring). ``example``: one input of the float model, ``[T, F]`` (the time-major frames the model takes,
    without the batch axis). Nothing is written when anything is refused."""
    from hybridai.neuromorphic.loihi2.network import Loihi2Network

    first, layers, host_readout, width, input_shift = netx_layers(model)
    if not torch.is_tensor(example) or example.ndim != 2:
        shown = tuple(example.shape) if torch.is_tensor(example) else type(example).__name__
        raise invalid("example", shown, "one float input [T, F] (time-major frames, no batch axis)", ShapeError)
    target = Path(path)
    if not target.parent.is_dir():
        raise invalid("path", str(path), "a file in an existing folder")
    assert first.config is not None  # the input layer is a SigmaDelta
    host = Loihi2Network([first], None, width, example.device).host_input(example.unsqueeze(1))
    entering = run_sigma_delta(first.config, host).messages * 2**input_shift
    _check_width("the input messages", entering, INPUT_MESSAGE_BITS)
    output = run_netx(layers, entering, check=True)
    _write(target, layers, entering.shape[2])
    return NetxExport(target, entering[:, 0].cpu(), output[:, 0].cpu(), layers[-1].grid, layers, host_readout)


def _check_width(what: str, values: torch.Tensor, bits: int) -> None:
    largest = int(values.abs().max()) if values.numel() else 0
    if largest >= 2 ** (bits - 1):
        raise ConfigError(
            f"{what} reach {largest} for this example; accepted: magnitudes below {2 ** (bits - 1)} (netx's "
            f"{bits}-bit messages): a coarser grid (SigmaDelta scale) or smaller inputs"
        )


def _write(target: Path, layers: list[NetxLayer], inputs: int) -> None:
    """The netx file: one group per layer under ``layer``, written to a temporary file that replaces ``target``."""
    import h5py

    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(handle)
    try:
        with h5py.File(temporary, "w") as f:
            group = f.create_group("layer")
            for index, layer in enumerate(layers):
                entry = group.create_group(str(index))
                entry.create_dataset("type", (1,), "S10", [b"dense"])
                entry.create_dataset("shape", data=[layer.weights.shape[0]])
                entry.create_dataset("weight", data=layer.weights.numpy())
                if bool((layer.bias != 0).any()):
                    entry.create_dataset("bias", data=layer.bias.numpy())
                neuron = entry.create_group("neuron")
                neuron.create_dataset("type", (1,), "S10", [b"SDNN"])
                neuron.create_dataset("vThMant", data=layer.vth)
            f.attrs["input_shape"] = [inputs]
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
