"""NIR (Neural Intermediate Representation) export and import of spiking models.

``to_nir(model)`` turns an ``nn.Sequential`` of ``nn.Linear``, ``LIF`` and ``CUBA`` layers into
a ``nir.NIRGraph``; ``from_nir(graph)`` rebuilds it. Write and read files with ``nir.write`` /
``nir.read`` (or pass a path to ``from_nir``).

Discretisation (forward Euler with step ``dt``, the convention snnTorch's exporter uses):
``tau_mem = dt / (1 - beta)``, ``r = tau_mem / dt`` (unit input gain), ``v_leak = 0``;
CUBA adds ``tau_syn = dt / (1 - alpha)`` and ``w_in = tau_syn / dt``. NIR's neuron equations
reset to ``v_reset``; a reset by subtraction cannot be written in them, so every neuron node
carries explicit metadata: ``dt`` (seconds), ``reset`` (``"subtract"`` or ``"zero"``) and the
surrogate; thresholds are NIR's own ``v_threshold`` (per neuron). Graphs from other tools, without that metadata, are
read with NIR's own semantics (reset to zero) and need ``dt``. nir is imported on first use
(``pip install 'hybridai[nir]'``).
"""

from __future__ import annotations

import math
import numbers
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from hybridai.core.errors import ConfigError, MissingExtraError, ShapeError, invalid
from hybridai.spiking.graph import lower
from hybridai.spiking.neurons import CUBA, LIF

PRODUCER = "hybridai"
NEURON_MODELS = (LIF, CUBA)  # the neuron models NIR's nodes write: nir.LIF and nir.CubaLIF
SUPPORTED = (
    f"nn.Linear, {' or '.join(f'hybridai.{model.__name__}' for model in NEURON_MODELS)} layers "
    "(nn.Identity, nn.Dropout skipped)"
)


def _nir() -> Any:
    try:
        import nir
    except ImportError:
        raise MissingExtraError("nir", "nir", "NIR export and import") from None
    return nir


def _per_neuron(tensor: torch.Tensor, n: int) -> np.ndarray:
    return np.broadcast_to(tensor.detach().cpu().double().numpy(), (n,)).copy()


def _time_constant(decay: np.ndarray, dt: float) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(decay >= 1.0, np.inf, dt / (1.0 - decay))


def _neuron_node(nir: Any, layer: LIF | CUBA, n: int) -> Any:
    dt = layer.dt
    beta = _per_neuron(layer.beta.clamp(0, 1), n)
    threshold = _per_neuron(layer.threshold, n)
    tau_mem = _time_constant(beta, dt)
    metadata = {"producer": PRODUCER, "dt": dt, "reset": layer.reset}
    metadata["surrogate"] = layer.surrogate.name
    metadata.update({f"surrogate_{k}": v for k, v in layer.surrogate.parameters_dict().items()})
    common = {"v_leak": np.zeros(n), "v_threshold": threshold, "v_reset": np.zeros(n), "metadata": metadata}
    if isinstance(layer, LIF):
        return nir.LIF(tau=tau_mem, r=tau_mem / dt, **common)
    alpha = _per_neuron(layer.alpha.clamp(0, 1), n)
    tau_syn = _time_constant(alpha, dt)
    return nir.CubaLIF(tau_syn=tau_syn, tau_mem=tau_mem, r=tau_mem / dt, w_in=tau_syn / dt, **common)


def to_nir(model: nn.Module, *, n_inputs: int | None = None) -> Any:
    """Export ``model`` (an ``nn.Sequential`` of ``nn.Linear``, ``LIF``, ``CUBA``, or one such layer).

    ``n_inputs`` is needed only when the model starts with a spiking layer whose size is
    unknown (it learns its size on the first forward call). Returns a ``nir.NIRGraph``.
    """
    nir = _nir()
    accepts = ("dense", *(neuron.kind for neuron in NEURON_MODELS))
    graph = lower(model, target="NIR export", accepts=accepts, supported=SUPPORTED, n_inputs=n_inputs)
    nodes: dict[str, Any] = {}
    dts: set[float] = set()
    for node in graph:
        layer = node.module
        if isinstance(layer, nn.Linear):  # kind "dense"
            weight = layer.weight.detach().cpu().double().numpy()
            nodes[node.index] = (
                nir.Affine(weight=weight, bias=layer.bias.detach().cpu().double().numpy())
                if layer.bias is not None
                else nir.Linear(weight=weight)
            )
        else:  # one of NEURON_MODELS, of a size ``lower`` knows (it asks for n_inputs otherwise)
            assert isinstance(layer, NEURON_MODELS) and node.width is not None, node
            nodes[node.index] = _neuron_node(nir, layer, node.width)
            dts.add(layer.dt)
    all_nodes = {
        "input": nir.Input(input_type=np.array([graph.n_inputs])),
        **nodes,
        "output": nir.Output(np.array([graph.layers[-1].width])),
    }
    path = ["input", *nodes, "output"]
    edges = list(zip(path[:-1], path[1:], strict=True))
    metadata = {"producer": PRODUCER, "time_major": True, **({"dt": dts.pop()} if len(dts) == 1 else {})}
    return nir.NIRGraph(nodes=all_nodes, edges=edges, metadata=metadata)


def _text(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "SO":
        return _text(value.item())
    return value


def _chain(graph: Any) -> list[str]:
    """Node names from input to output of a linear chain graph."""
    following: dict[str, list[str]] = {}
    for edge in graph.edges:
        if not isinstance(edge, tuple | list) or len(edge) != 2 or any(end not in graph.nodes for end in edge):
            names = sorted(graph.nodes)
            raise invalid("graph edge", _brief(edge), f"a (source, target) pair of node names among {names}")
        source, target = edge
        following.setdefault(source, []).append(target)
    inputs = [k for k, v in graph.nodes.items() if type(v).__name__ == "Input"]
    if len(inputs) != 1:
        raise invalid("graph", f"{len(inputs)} Input nodes", "a chain with exactly one Input node")
    order, current = [], inputs[0]
    while current in following:
        targets = following[current]
        if len(targets) != 1 or targets[0] in order:
            raise invalid(
                "graph", f"node {current!r} with successors {targets}", "a linear chain (no branches or loops)"
            )
        current = targets[0]
        order.append(current)
    if len(order) != len(graph.nodes) - 1 or type(graph.nodes[order[-1]]).__name__ != "Output":
        raise invalid("graph", sorted(graph.nodes), "a linear chain Input -> ... -> Output covering every node")
    return order[:-1]


def _decay(tau: np.ndarray, dt: float) -> np.ndarray:
    return 1.0 - dt / np.asarray(tau, dtype=np.float64)


def _scalar_or_vector(values: np.ndarray) -> torch.Tensor:
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    tensor = torch.tensor(values[0] if np.all(values == values[0]) else values, dtype=torch.float64)
    return tensor.to(torch.get_default_dtype())


def _check_dt(argument: str, value: Any) -> float:
    """A time step in seconds: a finite number > 0 (not a bool, not a string)."""
    if (
        isinstance(value, bool | np.bool_)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(float(value))
        or float(value) <= 0
    ):
        raise invalid(argument, value, "the time step in seconds, a finite number > 0")
    return float(value)


def _array(name: str, field: str, value: Any, *, ndim: tuple[int, ...] = (0, 1)) -> np.ndarray:
    """A node's numeric field as finite float64 of one of the ranks ``ndim``, else an error naming both."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise invalid(f"graph node {name!r} {field}", _brief(value), "an array of finite numbers") from None
    if array.ndim not in ndim:
        ranks = " or ".join(f"{d}-D" for d in ndim)
        raise invalid(f"graph node {name!r} {field}.shape", array.shape, f"a {ranks} array", ShapeError)
    if not np.all(np.isfinite(array)):
        raise invalid(f"graph node {name!r} {field}", "an array containing NaN or inf", "finite numbers")
    return array


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _width(name: str, fields: dict[str, np.ndarray], width: int) -> None:
    """Per-neuron fields must hold one value, or one per incoming neuron (``width``)."""
    for field, values in fields.items():
        if values.size not in (1, width):
            raise invalid(
                f"graph node {name!r} {field}",
                f"{values.size} values",
                f"1 or {width} (the width of the layer before it)",
                ShapeError,
            )


def _surrogate(name: str, meta: dict[str, Any]) -> Any:
    import inspect

    from hybridai.spiking.surrogate import SURROGATES

    surrogate = meta.get("surrogate", "atan")
    if surrogate not in SURROGATES:
        raise invalid(f"graph node {name!r} metadata 'surrogate'", surrogate, f"one of {sorted(SURROGATES)}")

    cls = SURROGATES[surrogate]
    known = [p for p in inspect.signature(cls).parameters if p != "self"]
    params: dict[str, float] = {}
    for key, value in meta.items():
        if not key.startswith("surrogate_"):
            continue
        parameter = key.removeprefix("surrogate_")
        if parameter not in known:
            raise invalid(f"graph node {name!r} metadata {key!r}", value, f"parameters of {surrogate!r}: {known}")
        if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
            raise invalid(f"graph node {name!r} metadata {key!r}", value, "a finite number")
        params[parameter] = float(value)
    return cls(**params)


def _neuron_from_node(node: Any, name: str, dt: float | None, width: int) -> LIF | CUBA:
    meta = {k: _text(v) for k, v in (node.metadata or {}).items()}
    if "dt" in meta:
        dt = _check_dt(f"graph node {name!r} metadata 'dt'", meta["dt"])
    if dt is None:
        raise invalid("dt", None, f"the time step in seconds (node {name!r} carries no 'dt' metadata)")
    reset = meta.get("reset", "zero")
    if reset not in ("subtract", "zero"):
        raise invalid(f"graph node {name!r} metadata 'reset'", reset, "'subtract' or 'zero'")
    lif = type(node).__name__ == "LIF"
    fields = {
        "tau" if lif else "tau_mem": _array(name, "tau" if lif else "tau_mem", node.tau if lif else node.tau_mem),
        "r": _array(name, "r", node.r),
        "v_leak": _array(name, "v_leak", node.v_leak),
        "v_threshold": _array(name, "v_threshold", node.v_threshold),
    }
    if node.v_reset is not None:
        fields["v_reset"] = _array(name, "v_reset", node.v_reset)
    if not lif:
        fields["tau_syn"] = _array(name, "tau_syn", node.tau_syn)
        fields["w_in"] = _array(name, "w_in", node.w_in)
    _width(name, fields, width)
    if reset == "zero" and not np.allclose(fields.get("v_reset", 0.0), 0):
        raise ConfigError(f"node {name!r} has v_reset={node.v_reset}; accepted: v_reset = 0")
    if not np.allclose(fields["v_leak"], 0):
        raise ConfigError(f"node {name!r} has v_leak={node.v_leak}; accepted: v_leak = 0")
    threshold = fields["v_threshold"]
    if np.any(threshold <= 0):
        raise invalid(
            f"graph node {name!r} v_threshold",
            float(threshold.min()),
            "values > 0 (a threshold <= 0 makes every neuron fire at every step, whatever its input)",
        )
    taus = [("tau" if lif else "tau_mem", fields["tau" if lif else "tau_mem"])]
    if not lif:
        taus.append(("tau_syn", fields["tau_syn"]))
    for field, tau in taus:
        if np.any(tau < dt):
            raise invalid(
                f"graph node {name!r} {field}",
                float(tau.min()),
                f"time constants >= dt={dt:g} s (a decay 1 - dt/tau in [0, 1]), or inf for no leak",
            )
    tau_mem = fields["tau" if lif else "tau_mem"]
    if not np.allclose(fields["r"] * dt / tau_mem, 1.0):
        raise ConfigError(
            f"node {name!r} has an input gain r*dt/tau != 1 with dt={dt:g} s; accepted: r = tau/dt "
            "(check dt: it must be the step the graph was exported with)"
        )
    options = {"threshold": _scalar_or_vector(threshold), "reset": reset, "surrogate": _surrogate(name, meta), "dt": dt}
    beta = _scalar_or_vector(_decay(tau_mem, dt))
    if lif:
        return LIF(beta, **options)
    if not np.allclose(fields["w_in"] * dt / fields["tau_syn"], 1.0):
        raise ConfigError(
            f"node {name!r} has an input gain w_in*dt/tau_syn != 1 with dt={dt:g} s; accepted: w_in = tau_syn/dt"
        )
    return CUBA(_scalar_or_vector(_decay(fields["tau_syn"], dt)), beta, **options)


def _io_width(name: str, node: Any, field: str) -> int:
    types = getattr(node, field, None)
    shape = next(iter(types.values())) if isinstance(types, dict) and len(types) == 1 else types
    try:
        shape = np.asarray(shape, dtype=np.int64).reshape(-1)
    except (TypeError, ValueError):
        shape = np.asarray([])
    if shape.size != 1 or shape[0] < 1:
        raise invalid(f"graph node {name!r} {field}", _brief(types), "one positive width (a 1-D input/output)")
    return int(shape[0])


def _read(nir: Any, path: Any) -> Any:
    """``nir.read`` with errors that name the file and what is wrong with it."""
    path = Path(path)
    if path.is_dir():
        raise invalid("graph", str(path), "a .nir file; this is a folder")
    if not path.is_file():
        raise invalid("graph", str(path), "a nir.NIRGraph or the path of an existing .nir file")
    with open(path, "rb") as f:
        head = f.read(8)
    if head != b"\x89HDF\r\n\x1a\n":
        shown = "an empty file" if not head else f"a file that starts with {head!r}"
        raise ConfigError(
            f"graph={str(path)!r} is not a NIR file: it is {shown}; accepted: an HDF5 file written by nir.write"
        )
    try:  # widths are checked below, naming the nodes; nir's own type check would raise a bare ValueError
        return nir.read(path, type_check=False)
    except Exception as exc:  # h5py and nir report damage with many exception types
        raise ConfigError(
            f"graph={str(path)!r} is a damaged or truncated NIR file and cannot be read "
            f"({type(exc).__name__}: {str(exc)[:200]}); accepted: a file written by nir.write"
        ) from None


def from_nir(graph: Any, *, dt: float | None = None) -> nn.Sequential:
    """Rebuild an ``nn.Sequential`` from a NIR graph (or a path to a ``.nir`` file).

    ``dt`` (seconds) is used for neuron nodes without hybridai metadata. Supported nodes:
    Affine, Linear, LIF, CubaLIF in a linear chain. Every node is checked first (finite values,
    ranks, widths that match from the Input node to the Output node, thresholds > 0, time
    constants >= dt); an error names the node and the field.
    """
    nir = _nir()
    if dt is not None:
        dt = _check_dt("dt", dt)
    if isinstance(graph, str | os.PathLike):
        graph = _read(nir, graph)
    if not isinstance(graph, nir.NIRGraph):
        raise invalid("graph", type(graph).__name__, "a nir.NIRGraph or the path of a .nir file")
    chain = _chain(graph)
    inputs = [k for k, v in graph.nodes.items() if type(v).__name__ == "Input"]
    width = _io_width(inputs[0], graph.nodes[inputs[0]], "input_type")
    layers: list[tuple[str, nn.Module]] = []
    for name in chain:
        node = graph.nodes[name]
        kind = type(node).__name__
        if kind in ("Affine", "Linear"):
            weight = _array(name, "weight", node.weight, ndim=(2,))
            if weight.shape[1] != width:
                raise invalid(
                    f"graph node {name!r} weight.shape",
                    weight.shape,
                    f"[n_out, {width}] ({width} inputs from the node before it)",
                    ShapeError,
                )
            bias = _array(name, "bias", node.bias, ndim=(1,)) if kind == "Affine" else None
            if bias is not None and bias.shape != (weight.shape[0],):
                raise invalid(
                    f"graph node {name!r} bias.shape", bias.shape, f"({weight.shape[0]},), one per output", ShapeError
                )
            linear = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None)
            with torch.no_grad():
                linear.weight.copy_(torch.from_numpy(weight))
                if bias is not None:
                    linear.bias.copy_(torch.from_numpy(bias))
            layers.append((name.replace(".", "_"), linear))
            width = weight.shape[0]
        elif kind in ("LIF", "CubaLIF"):
            layers.append((name.replace(".", "_"), _neuron_from_node(node, name, dt, width)))
        else:
            raise invalid(f"graph node {name!r}", kind, "Affine, Linear, LIF or CubaLIF nodes")
    output = next(k for k, v in graph.nodes.items() if type(v).__name__ == "Output")
    expected = _io_width(output, graph.nodes[output], "output_type")
    if expected != width:
        raise invalid(
            f"graph node {output!r} output_type", expected, f"{width}, the width of the layer before it", ShapeError
        )
    return nn.Sequential(OrderedDict(layers))
