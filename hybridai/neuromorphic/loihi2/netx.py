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
Convolutions (``TimeDistributed(nn.Conv2d)``) are written as netx ``conv`` layers: Lava's Conv computes with
the weights as given (no exponent) in float32 and keeps 24 bits, and maps reaching a Linear pass a ``flatten``
entry (torch's order). Refused by name, before a file is written: weights beyond 254 in netx's units, all-zero
weights (netx divides by the largest), registers beyond int32, and examples whose messages, convolution sums or
states leave netx's widths.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from hybridai.core.errors import ConfigError, invalid
from hybridai.neuromorphic.fixed_point import graded_sums, wrap
from hybridai.neuromorphic.loihi2.graded_chain import Convolution
from hybridai.neuromorphic.loihi2.plan import StagePlan, chip_weight, plan
from hybridai.neuromorphic.loihi2.sigma_delta import SigmaDeltaConfig, run_sigma_delta
from hybridai.neuromorphic.netx import (
    INPUT_MESSAGE_BITS,
    HostReadout,
    NetxExport,
    check_example,
    check_target,
    check_width,
    write,
)

__all__ = ["NetxLayer", "NetxPlan", "export_netx", "netx_layers", "run_netx"]

FRACTION_BITS = 6  # netx's state_exp: bits a message keeps below the layer's grid
REGISTER_SHIFT = 12  # spike_exp + state_exp: vThMant and bias are shifted left by this much
MESSAGE_BITS = 16  # netx's messages of SDNN and Sigma neurons (num_message_bits default)
WEIGHT_LIMIT = 254  # the largest magnitude netx's weight optimisation keeps exactly in every sign mode


@dataclass(frozen=True)
class NetxLayer:
    """One layer of the file: a Dense of integer ``weights`` ``[N, F]`` (or a convolution, ``weights`` ``[C', C /
    groups, kh, kw]`` with its ``conv`` geometry) into SDNN neurons, ``vth`` and ``bias`` (one per neuron, or per
    channel of maps) as the file holds them (the registers are these times 2^12); ``grid``: the float value of one
    unit of its messages."""

    name: str
    weights: torch.Tensor
    vth: int
    bias: torch.Tensor
    grid: float
    conv: Convolution | None = None

    @property
    def config(self) -> SigmaDeltaConfig:
        """The sigma-delta registers Lava builds for the layer (``SigmaDelta(vth, bias, state_exp=6,
        spike_exp=6)``)."""
        shift = 2**REGISTER_SHIFT
        bias = int(self.bias[0]) if bool((self.bias == self.bias[0]).all()) else self.bias
        return SigmaDeltaConfig(vth=self.vth * shift, bias=bias * shift, state_exp=FRACTION_BITS)


class NetxPlan(NamedTuple):
    """hybridai's plan (the host runs its input layer), the file's layers, what the host computes from their
    output, the input width (None: any) and the shift of the input messages."""

    stages: list[StagePlan]  # hybridai's plan: the host's input layer first
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
        assert stage.weights is not None and stage.config is not None  # synapses into sigma-delta neurons
        fraction = REGISTER_SHIFT - input_shift if not layers else FRACTION_BITS  # bits the incoming messages lack
        scaled = stage.weights.double() * 2.0 ** (stage.weight_exp + fraction)
        weights = torch.round(scaled).long()
        _check_weights(stage.name, weights)
        vth = _register(f"{stage.name}.threshold", stage.config.vth, scalar=True)
        bias = torch.as_tensor(stage.config.bias, dtype=torch.int64).expand(weights.shape[0]).clone()
        _register(f"{stage.name}.bias", bias, scalar=False)
        layers.append(NetxLayer(stage.name, weights, vth, bias, stage.grid / 2**FRACTION_BITS, stage.conv))
    weight = None if readout is None else chip_weight(readout, stages[-1].grid)
    host = HostReadout(layers[-1].grid, weight, planned.decoder)
    return NetxPlan(planned.stages, layers, host, planned.width, input_shift)


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
    ``messages`` ``[T, B, F]`` (or maps ``[T, B, C, H, W]``; integers): each Dense or convolution delivers one
    step later (sums wrapped to int32 as Lava's Dense, to 24 bits as its Conv), SDNN groups follow
    ``run_sigma_delta``; maps reaching a Dense are flattened (torch's order). ``check``: refuse (ConfigError) a run
    whose states could leave int32, whose convolution sums leave 24 bits (Lava's Conv computes in float32) or whose
    messages leave netx's 16 bits."""
    current = torch.as_tensor(messages).long()
    for layer in layers:
        steps, batch = current.shape[:2]
        weights = layer.weights.to(current.device)
        if layer.conv is None:
            incoming = current.reshape(steps, batch, -1)  # maps into a Dense: flattened
            sums = torch.zeros(steps, batch, weights.shape[0], dtype=torch.int64, device=current.device)
            sums[1:] = graded_sums(weights, incoming[:-1], 0)
        else:
            maps = current[:-1].reshape(-1, *current.shape[2:]).double()
            if check:
                reach = float(layer.conv(maps.abs(), weights.abs().double()).max()) if maps.numel() else 0.0
                if reach >= 2**23:
                    raise ConfigError(
                        f"{layer.name}'s convolution sums could reach {reach:.4g} for this example; accepted: below "
                        "2^23 (Lava's Conv sums in float32 and keeps 24 bits), in units of 1/4096 of the "
                        "SigmaDelta's scale: smaller inputs or weights"
                    )
            delivered = layer.conv(maps, weights.double()).round().long()
            delivered = wrap(delivered, 23).reshape(steps - 1, batch, *delivered.shape[1:])
            sums = torch.zeros(steps, batch, *delivered.shape[2:], dtype=torch.int64, device=current.device)
            sums[1:] = delivered
        flat = sums.reshape(steps, batch, -1)
        if check:
            registers = 2**REGISTER_SHIFT * (int(layer.bias.abs().max()) + layer.vth)
            _check_bound(f"{layer.name}'s state", float(flat.abs().sum(0, dtype=torch.float64).max()) + registers)
        current = run_sigma_delta(layer.config, flat).messages.reshape(sums.shape)
        if check:
            check_width(f"{layer.name}'s messages", current, MESSAGE_BITS)
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
    without the batch axis), or ``[T, C, H, W]`` when a convolution comes first. Nothing is written when anything
    is refused."""
    from hybridai.neuromorphic.loihi2.network import Loihi2Network

    stages, layers, host_readout, width, input_shift = netx_layers(model)
    maps = layers[0].conv is not None
    accepted = (
        "one float input [T, C, H, W] (maps, no batch axis)" if maps else "one float input [T, F] (no batch axis)"
    )
    example = check_example(example, accepted, 4 if maps else 2)
    target = check_target(path)
    first = stages[0]
    assert first.config is not None  # the input layer is a SigmaDelta
    host = Loihi2Network(stages[:2], None, width, example.device).host_input(example.unsqueeze(1))
    flat = host.reshape(*host.shape[:2], -1)
    entering = (run_sigma_delta(first.config, flat).messages * 2**input_shift).reshape(host.shape)
    check_width("the input messages", entering, INPUT_MESSAGE_BITS)
    output = run_netx(layers, entering, check=True)
    write(target, _entries(layers, tuple(entering.shape[2:])))
    return NetxExport(target, entering[:, 0].cpu(), output[:, 0].cpu(), layers, host_readout)


def _entries(layers: list[NetxLayer], shape: tuple[int, ...]) -> list[dict[str, Any]]:
    """The file's layer entries (``netx.write``) for input messages of one sample's ``shape``."""
    entries: list[dict[str, Any]] = []
    for layer in layers:
        bias = layer.bias if bool((layer.bias != 0).any()) else None
        neuron = {"type": "SDNN", "vThMant": layer.vth}
        if layer.conv is None:
            if len(shape) > 1:
                entries.append({"type": "flatten"})
            shape = (layer.weights.shape[0],)
            entries.append({"type": "dense", "shape": shape, "weight": layer.weights, "bias": bias, "neuron": neuron})
            continue
        shape = layer.conv.output_shape(shape, layer.weights)
        geometry = {k: getattr(layer.conv, k) for k in ("stride", "padding", "dilation", "groups")}
        entries.append(
            {"type": "conv", "shape": shape, "weight": layer.weights, "bias": bias} | geometry | {"neuron": neuron}
        )
    return entries
