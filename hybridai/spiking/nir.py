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

import os
from collections import OrderedDict
from typing import Any

import numpy as np
import torch
from torch import nn

from hybridai.core.errors import ConfigError, MissingExtraError, invalid
from hybridai.spiking.graph import lower
from hybridai.spiking.neurons import CUBA, LIF

PRODUCER = "hybridai"
SUPPORTED = "nn.Linear, hybridai.LIF or hybridai.CUBA layers (nn.Identity, nn.Dropout skipped)"


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
    graph = lower(model, target="NIR export", accepts=("dense", "lif", "cuba"), supported=SUPPORTED, n_inputs=n_inputs)
    nodes: dict[str, Any] = {}
    for node in graph:
        layer = node.module
        if node.kind == "dense":
            weight = layer.weight.detach().cpu().double().numpy()
            nodes[node.index] = (
                nir.Affine(weight=weight, bias=layer.bias.detach().cpu().double().numpy())
                if layer.bias is not None
                else nir.Linear(weight=weight)
            )
        else:
            nodes[node.index] = _neuron_node(nir, layer, node.width)
    all_nodes = {
        "input": nir.Input(input_type=np.array([graph.n_inputs])),
        **nodes,
        "output": nir.Output(np.array([graph.layers[-1].width])),
    }
    path = ["input", *nodes, "output"]
    edges = list(zip(path[:-1], path[1:], strict=True))
    dts = sorted({node.module.dt for node in graph if node.kind != "dense"})
    metadata = {"producer": PRODUCER, "time_major": True, **({"dt": dts[0]} if len(dts) == 1 else {})}
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
    for source, target in graph.edges:
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


def _neuron_from_node(node: Any, name: str, dt: float | None) -> LIF | CUBA:
    meta = {k: _text(v) for k, v in (node.metadata or {}).items()}
    dt = float(meta["dt"]) if "dt" in meta else dt
    if dt is None:
        raise invalid("dt", None, f"the time step in seconds (node {name!r} carries no 'dt' metadata)")
    reset = meta.get("reset", "zero")
    if reset == "zero" and not np.allclose(node.v_reset, 0):
        raise ConfigError(f"node {name!r} has v_reset={node.v_reset}; accepted: v_reset = 0")
    if not np.allclose(node.v_leak, 0):
        raise ConfigError(f"node {name!r} has v_leak={node.v_leak}; accepted: v_leak = 0")
    tau_mem = node.tau if type(node).__name__ == "LIF" else node.tau_mem
    if not np.allclose(np.asarray(node.r) * dt / np.asarray(tau_mem), 1.0):
        raise ConfigError(f"node {name!r} has an input gain r*dt/tau != 1; accepted: r = tau/dt")
    surrogate = meta.get("surrogate", "atan")
    if surrogate in ("atan", "fast_sigmoid"):
        from hybridai.spiking.surrogate import SURROGATES

        params = {k.removeprefix("surrogate_"): float(v) for k, v in meta.items() if k.startswith("surrogate_")}
        surrogate = SURROGATES[surrogate](**params)
    options = {"threshold": _scalar_or_vector(node.v_threshold), "reset": reset, "surrogate": surrogate, "dt": dt}
    beta = _scalar_or_vector(_decay(tau_mem, dt))
    if type(node).__name__ == "LIF":
        return LIF(beta, **options)
    if not np.allclose(np.asarray(node.w_in) * dt / np.asarray(node.tau_syn), 1.0):
        raise ConfigError(f"node {name!r} has an input gain w_in*dt/tau_syn != 1; accepted: w_in = tau_syn/dt")
    return CUBA(_scalar_or_vector(_decay(node.tau_syn, dt)), beta, **options)


def from_nir(graph: Any, *, dt: float | None = None) -> nn.Sequential:
    """Rebuild an ``nn.Sequential`` from a NIR graph (or a path to a ``.nir`` file).

    ``dt`` (seconds) is used for neuron nodes without hybridai metadata. Supported nodes:
    Affine, Linear, LIF, CubaLIF in a linear chain.
    """
    nir = _nir()
    if isinstance(graph, str | os.PathLike):
        graph = nir.read(graph)
    if not isinstance(graph, nir.NIRGraph):
        raise invalid("graph", type(graph).__name__, "a nir.NIRGraph or the path of a .nir file")
    layers: list[tuple[str, nn.Module]] = []
    for name in _chain(graph):
        node = graph.nodes[name]
        kind = type(node).__name__
        if kind in ("Affine", "Linear"):
            weight = torch.from_numpy(np.asarray(node.weight, dtype=np.float64))
            linear = nn.Linear(weight.shape[1], weight.shape[0], bias=kind == "Affine")
            with torch.no_grad():
                linear.weight.copy_(weight)
                if kind == "Affine":
                    linear.bias.copy_(torch.from_numpy(np.asarray(node.bias, dtype=np.float64)))
            layers.append((name.replace(".", "_"), linear))
        elif kind in ("LIF", "CubaLIF"):
            layers.append((name.replace(".", "_"), _neuron_from_node(node, name, dt)))
        else:
            raise invalid(f"graph node {name!r}", kind, "Affine, Linear, LIF or CubaLIF nodes")
    return nn.Sequential(OrderedDict(layers))
