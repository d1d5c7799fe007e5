"""lava-dl "netx" HDF5 files: what chip exporters share (the file, the result, the host's part).

A netx file (read by ``lava.lib.dl.netx.hdf5.Network``) holds one group per layer under ``layer``: its ``type``
(``dense``, ``conv`` or ``flatten`` here), ``shape`` (``[N]``, or ``[C, H, W]`` maps), integer ``weight`` (``[N,
F]``, or ``[C', C / groups, kh, kw]`` as torch holds a Conv2d's), optional ``bias``, a convolution's ``stride``,
``padding``, ``dilation`` (``[h, w]``) and ``groups``, and a ``neuron`` group (``type`` ``SDNN`` or ``CUBA`` and
its registers). The exporters are ``hybridai.neuromorphic.loihi2.export_netx``
(sigma-delta networks) and ``hybridai.neuromorphic.loihi.export_netx`` (LIF networks).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from hybridai.core.errors import ConfigError, ShapeError, invalid

__all__ = ["INPUT_MESSAGE_BITS", "HostReadout", "NetxExport", "check_example", "check_target", "check_width", "write"]

INPUT_MESSAGE_BITS = 24  # the input messages: Network(..., input_message_bits=24)


@dataclass(frozen=True)
class HostReadout:
    """What the host computes from the network's output: one output unit is worth ``grid``; then the model's
    read-out Linear with the weights hybridai's chip holds (``weight``, float64 ``[C, N]``; None without) and its
    decoder (None without)."""

    grid: float
    weight: torch.Tensor | None
    decoder: nn.Module | None

    def decode(self, output: Any) -> torch.Tensor:
        """The model's output for the network's ``output`` ``[T, N]`` or ``[T, B, N]`` (float64)."""
        values = torch.as_tensor(output).double() * self.grid
        one = values.ndim == 2
        values = values.unsqueeze(1) if one else values  # [T, B, N], as the decoder takes it
        if self.weight is not None:
            values = values @ self.weight.to(values.device).T
        if self.decoder is not None:
            values = self.decoder(values)
            return values[0] if one else values
        return values[:, 0] if one else values


class NetxExport(NamedTuple):
    """What an exporter wrote and computed: the file, the example's integer messages into the first layer
    (``input``, ``[T, F]`` int64), what a Lava sink on the output port receives over the same T steps
    (``output``, ``[T, N]`` int64, one step later per layer), the layers written and what the host does with the
    output (``host.decode(output)``)."""

    path: Path
    input: torch.Tensor
    output: torch.Tensor
    layers: list[Any]
    host: HostReadout


def check_example(example: Any, accepted: str, ndim: int = 2) -> torch.Tensor:
    """``example`` if it is one input of ``ndim`` dimensions (time first, no batch axis), else a ShapeError."""
    if not torch.is_tensor(example) or example.ndim != ndim or 0 in example.shape:
        shown = tuple(example.shape) if torch.is_tensor(example) else type(example).__name__
        raise invalid("example", shown, accepted, ShapeError)
    return example


def check_target(path: str | os.PathLike[str]) -> Path:
    """``path`` as a Path in an existing folder, else a ConfigError naming it."""
    target = Path(path)
    if not target.parent.is_dir():
        raise invalid("path", str(path), "a file in an existing folder")
    return target


def check_width(what: str, values: torch.Tensor, bits: int) -> None:
    """Refuse ``values`` (signed integers) that do not fit ``bits``-bit messages."""
    largest = int(values.abs().max()) if values.numel() else 0
    if largest >= 2 ** (bits - 1):
        raise ConfigError(
            f"{what} reach {largest} for this example; accepted: magnitudes below {2 ** (bits - 1)} (netx's "
            f"{bits}-bit messages): a coarser grid or smaller inputs"
        )


def write(target: Path, layers: list[dict[str, Any]]) -> None:
    """Write the netx file ``target``: per layer a dict of ``type`` (``"dense"``, ``"conv"``, ``"flatten"``), its
    integer datasets (``shape``, ``weight``, ``bias``, ``stride``, ...; None: left out) and ``neuron`` (``type`` and
    integer registers); to a temporary file that then replaces ``target``, so nothing is half-written."""
    import h5py

    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(handle)
    try:
        with h5py.File(temporary, "w") as f:
            group = f.create_group("layer")
            for index, layer in enumerate(layers):
                entry = group.create_group(str(index))
                entry.create_dataset("type", (1,), "S10", [layer["type"].encode("ascii")])
                for name, value in layer.items():
                    if name not in ("type", "neuron") and value is not None:
                        entry.create_dataset(name, data=np.asarray(value, dtype=np.int64))
                if "neuron" in layer:
                    neuron = entry.create_group("neuron")
                    for name, value in layer["neuron"].items():
                        if name == "type":
                            neuron.create_dataset("type", (1,), "S10", [value.encode("ascii")])
                        else:
                            neuron.create_dataset(name, data=value)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
