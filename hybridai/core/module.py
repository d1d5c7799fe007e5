"""HybridModule (the base of every hybridai layer), placement and the model summary.

A model is ONE ``nn.Module`` tree. Each hybridai layer knows its ``domain``
(classical, quantum, spiking) and its ``backend`` (a registry name resolved lazily);
any plain ``nn.Module`` counts as classical and runs on the torch device of its
parameters.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, ClassVar

from torch import nn

from hybridai.core import registry
from hybridai.core.contracts import DOMAINS, Backend, Placement, QuantumExecutor
from hybridai.core.errors import ConfigError, HybridAIError, invalid, suggest
from hybridai.core.foreign import read_backend, read_layer
from hybridai.core.text_table import format_table


class HybridModule(nn.Module):
    """An ``nn.Module`` with a domain and a backend.

    Subclasses set ``domain`` and ``default_backend`` and call ``set_backend`` in their
    constructor (which validates the name and the domain at once). The configured
    backend object is rebuilt on demand after pickling, so ``torch.save(model)`` works.
    """

    domain: ClassVar[str] = "classical"
    default_backend: ClassVar[str] = "torch"

    def __init__(self) -> None:
        super().__init__()
        self._backend_name = self.default_backend
        self._backend_options: dict[str, Any] = {}
        self._backend: Backend | None = None

    @property
    def backend(self) -> str:
        """The registry name of this layer's backend, e.g. ``"pennylane:default.qubit"``."""
        return self._backend_name

    @property
    def backend_options(self) -> dict[str, Any]:
        """The options this layer's backend was configured with (a copy), e.g. ``{"seed": 3}``."""
        return dict(self._backend_options)

    def set_backend(self, backend: str | Backend, **options: Any) -> HybridModule:
        """Re-target this layer; raises a HybridAIError for unknown or wrong-domain backends, or for a backend
        this layer cannot run on (``check_backend``); the layer is unchanged then."""
        resolved = _resolve(backend, self.domain, options)
        self.check_backend(resolved)
        self._backend_name = resolved.name
        # a backend object brings its own options: kept so that it can be rebuilt after unpickling
        self._backend_options = dict(resolved.options if isinstance(backend, Backend) else options)
        self._backend = resolved
        return self

    def check_backend(self, backend: Backend) -> None:
        """Raise a HybridAIError when this layer cannot run on ``backend`` (a quantum layer wider than
        the backend's qubit count, say); called before the layer is re-targeted. Accepts everything here."""

    @property
    def resolved_backend(self) -> Backend:
        """The configured backend object (created on first use)."""
        if self._backend is None:
            self._backend = _resolve(self._backend_name, self.domain, self._backend_options)
        return self._backend

    def backend_description(self) -> str:
        """The backend as the summary shows it: its name here; subclasses add what else decides where the layer
        runs (a user's device with its transforms, say)."""
        return self.backend

    def size_description(self) -> str:
        """Qubits or neurons, for the summary table; '' when not meaningful."""
        return ""

    def __getstate__(self) -> dict[str, Any]:
        if hasattr(super(), "__getstate__"):
            state = super().__getstate__()  # type: ignore[no-untyped-call]  # torch's Module.__getstate__: no annotations
        else:
            state = self.__dict__.copy()
        state = dict(state)
        state["_backend"] = None  # backends hold devices and locks: rebuilt lazily after loading
        return state

    def extra_repr(self) -> str:
        return f"backend={self._backend_name!r}"


def _resolve(backend: str | Backend, domain: str, options: dict[str, Any]) -> Backend:
    """The backend for a layer of ``domain``: a quantum executor for quantum layers, a placement
    for classical and spiking ones (a chip compiler is refused with a pointer to ``hybridai.deploy``)."""
    contract = QuantumExecutor if domain == "quantum" else Placement
    return registry.get(backend, contract, domain=domain, **options)


def domain_of(module: nn.Module) -> str:
    """The domain a layer belongs to: a hybridai layer's own, a foreign layer's (``hybridai.core.foreign``: a
    ``qml.qnn.TorchLayer`` is quantum), else classical."""
    if isinstance(module, HybridModule):
        return module.domain
    foreign = read_layer(module)
    return "classical" if foreign is None else foreign.domain


def _layers(model: nn.Module, prefix: str = "") -> Iterator[tuple[str, nn.Module]]:
    """Leaf modules, hybridai layers and foreign layers (not descending into them), with qualified names: every
    position, so a module used twice is listed twice (``named_children`` would skip the second use)."""
    children = [(name, child) for name, child in model._modules.items() if child is not None]
    if isinstance(model, HybridModule) or not children or read_layer(model) is not None:
        yield prefix or type(model).__name__, model
        return
    for name, child in children:
        yield from _layers(child, f"{prefix}.{name}" if prefix else name)


def _classical_backend_name(module: nn.Module) -> str:
    tensors = list(module.parameters()) + list(module.buffers())
    if not tensors:
        return "torch"
    device = tensors[0].device
    return f"torch:{device}" if device.type != "cpu" or device.index is not None else "torch:cpu"


def place(
    model: nn.Module,
    *,
    quantum: Any = None,
    spiking: str | Backend | None = None,
    classical: str | Backend | None = None,
    **options: Any,
) -> nn.Module:
    """Re-target every layer of a domain to a backend; returns the placed model.

    ``place(model, quantum="pennylane:lightning.qubit", classical="torch:cuda")``. Each backend is given as
    ``QuantumLayer(backend=...)`` takes it: a registry name; a configured backend object
    (``hybridai.backends.get(...)``), shared by every layer it is given to; and for ``quantum=`` a PennyLane
    device (``qml.device("lightning.qubit", wires=4)``, with its shots) or a Qiskit backend (``AerSimulator()``
    with its noise model, ``FakeManilaV2()``). ``options`` go to the backends so named and override those a
    device or Qiskit backend implies. Plain ``nn.Module`` layers are classical and are handed to the classical
    backend, which moves (or wraps) them. A ``qml.qnn.TorchLayer`` is quantum: given ``quantum=``, it is
    replaced where it sits by a ``QuantumLayer`` with its circuit, its input argument, its output shapes and
    its very weights (the same ``nn.Parameter`` objects: an optimizer built before keeps training them), or
    refused by name when it cannot be adopted exactly (``hybridai.quantum.torchlayer``).

    The model is changed in place; the returned object is ``model`` itself unless what stands in its place
    changed: a classical backend wraps the root module (a bare ``nn.Linear`` on a plugin backend), or the root
    is an adopted ``TorchLayer``. Every backend and every layer is checked before any layer changes (a device's
    wires against each layer's qubits, each layer's qubit count against the backend's), so a refusal leaves the
    model untouched.
    """
    if not isinstance(model, nn.Module):
        raise invalid("model", type(model).__name__, "a torch.nn.Module")
    targets = {"quantum": quantum, "spiking": spiking, "classical": classical}
    for key in options:  # a misspelt domain would otherwise be taken for a backend option and do nothing
        hint = suggest(key, targets)
        if hint or all(n is None for n in targets.values()):
            raise ConfigError(  # the value is not shown: it may be a token
                f"{key}=... is not valid for place() here; accepted: quantum=, spiking=, classical= (backend "
                f"names), and options for the backends so named.{hint}"
            )
    resolved = {d: _resolve_target(d, value, options) for d, value in targets.items() if value is not None}
    layers = list(_layers(model))
    adopted = _adopt_foreign(layers, resolved)
    _check_layers(layers, adopted, resolved, targets)
    return _place_tree(model, resolved, adopted, {})


def retarget(model: nn.Module, domain: str, backend: Backend | None, requested: Any = None) -> nn.Module:
    """Every layer of ``domain`` in ``model``, at any depth, on ``backend`` (a configured backend object; None: each
    keeps its own), a foreign one adopted first: what ``place(model, <domain>=...)`` does to one domain (nothing
    else moves), checked before anything changes. ``requested``: the value ``backend`` was made from (a PennyLane
    device, whose wires are checked against each layer's qubits). Returns what stands in place of ``model``."""
    resolved = {domain: backend}
    layers = list(_layers(model))
    adopted = _adopt_foreign(layers, resolved)
    _check_layers(layers, adopted, resolved, {domain: requested})
    return _place_tree(model, {} if backend is None else {domain: backend}, adopted, {})


def _check_layers(
    layers: list[tuple[str, nn.Module]],
    adopted: dict[int, nn.Module],
    resolved: Mapping[str, Backend | None],
    targets: dict[str, Any],
) -> None:
    """Every layer of a re-targeted domain accepts its new backend (before any changes): a device's wires against
    its qubits (``targets``: the values given), its qubit count against the backend's."""
    for name, layer in layers:
        layer = adopted.get(id(layer), layer)
        if isinstance(layer, HybridModule) and layer.domain in resolved:
            with _about(f"layer {name!r}:"):
                if targets.get(layer.domain) is not None:
                    read_backend(layer.domain, targets[layer.domain], layer)
                backend = resolved[layer.domain]
                if backend is not None:
                    layer.check_backend(backend)


@contextmanager
def _about(what: str) -> Iterator[None]:
    """Put ``what`` (``"quantum="``, ``"layer 'encoder.1':"``) in front of the message of a HybridAIError raised
    inside, unless the message starts with it: the error then says which argument or layer it concerns."""
    try:
        yield
    except HybridAIError as exc:
        message = str(exc)
        if not message.startswith(what):
            exc.args = (f"{what} {message}", *exc.args[1:])
        raise


def _resolve_target(domain: str, value: Any, options: dict[str, Any]) -> Backend:
    """The backend ``place(<domain>=value, **options)`` asks for; its errors name ``<domain>=``."""
    with _about(f"{domain}="):
        spec, implied = read_backend(domain, value)
        return _resolve(spec, domain, {**implied, **options})


def _adopt_foreign(layers: list[tuple[str, nn.Module]], resolved: Mapping[str, Backend | None]) -> dict[int, nn.Module]:
    """The hybridai layers that will stand in for the foreign layers of the re-targeted domains (on their backend;
    None: where each runs now), by ``id`` of the foreign layer (one per layer, even where it appears twice); built
    before anything changes."""
    adopted: dict[int, nn.Module] = {}
    for name, layer in layers:
        foreign = None if isinstance(layer, HybridModule) or id(layer) in adopted else read_layer(layer)
        if foreign is not None and foreign.domain in resolved:
            with _about(f"layer {name!r}:"):
                adopted[id(layer)] = foreign.adopt(resolved[foreign.domain])
    return adopted


def _place_tree(
    module: nn.Module, resolved: dict[str, Backend], adopted: dict[int, nn.Module], done: dict[int, nn.Module]
) -> nn.Module:
    """Place ``module`` and its subtree once (``done``: what stands in place of each module placed, by ``id``, so
    that a module shared by two parents is replaced by one and the same module in both)."""
    if id(module) not in done:
        done[id(module)] = _place_module(module, resolved, adopted, done)
    return done[id(module)]


def _place_module(
    module: nn.Module, resolved: dict[str, Backend], adopted: dict[int, nn.Module], done: dict[int, nn.Module]
) -> nn.Module:
    """Place ``module`` and its subtree; return what stands in its place (adopted, moved or wrapped)."""
    module = adopted.get(id(module), module)
    if isinstance(module, HybridModule):
        backend = resolved.get(module.domain)
        if backend is None:
            return module
        module.set_backend(backend)
        return backend.place(module) if isinstance(backend, Placement) else module
    if read_layer(module) is not None:
        return module  # a foreign layer of a domain not re-targeted: its own framework runs it, as before
    for name, child in list(module._modules.items()):  # every slot, a module shared by two of them included
        placed = child if child is None else _place_tree(child, resolved, adopted, done)
        if placed is not child:
            setattr(module, name, placed)
    leaf = next(module.children(), None) is None or next(module.parameters(recurse=False), None) is not None
    classical = resolved.get("classical")
    return classical.place(module) if leaf and isinstance(classical, Placement) else module


class Summary(str):
    """The summary table as text; its repr is the table itself, so a notebook shows it once, as a table."""

    def __repr__(self) -> str:
        return str(self)


def summary(model: nn.Module, *, show: bool = False) -> Summary:
    """A table of layers: name, type, domain, backend, trainable parameters, qubits/neurons (a ``qml.qnn.TorchLayer``
    is a quantum layer on its device: ``hybridai.core.foreign``).

    Returned as a ``Summary`` (a ``str`` whose repr is the table: the last line of a notebook cell
    shows it once); ``print(hybridai.summary(model))`` in a script, or ``show=True`` to print it too.
    """
    if not isinstance(model, nn.Module):
        raise invalid("model", type(model).__name__, "a torch.nn.Module")
    rows, total = [], 0
    counts = dict.fromkeys(DOMAINS, 0)
    first: dict[int, str] = {}  # a module used at several positions: its parameters counted once
    for name, layer in _layers(model):
        n_params = sum(p.numel() for p in layer.parameters() if p.requires_grad)
        shared = first.setdefault(id(layer), name) != name
        total += 0 if shared else n_params
        foreign = None if isinstance(layer, HybridModule) else read_layer(layer)
        if isinstance(layer, HybridModule):
            domain, backend, size = layer.domain, layer.backend_description(), layer.size_description()
        elif foreign is not None:  # a qml.qnn.TorchLayer: quantum, on its device
            domain, backend, size = foreign.domain, foreign.backend, foreign.size
        else:
            domain, backend, size = "classical", _classical_backend_name(layer), ""
        counts[domain] += 1
        params = f"{n_params:,} (layer {first[id(layer)]}'s)" if shared else f"{n_params:,}"
        rows.append([name, type(layer).__name__, domain, backend, params, size])
    mix = ", ".join(f"{n} {d}" for d, n in counts.items() if n)
    footer = ["total", f"{len(rows)} layers", mix, "", f"{total:,}", ""]
    text = format_table(["layer", "type", "domain", "backend", "params", "qubits/neurons"], rows, footer)
    if show:
        print(text)
    return Summary(text)
