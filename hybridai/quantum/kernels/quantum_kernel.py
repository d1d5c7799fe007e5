"""QuantumKernel: a kernel k(x, y) from a PennyLane feature map, as a torch module.

``feature_map(x, **params)`` is a PennyLane quantum function that prepares |phi(x)> from
|0...0> (measurements it returns are ignored), or a QNode of one (its function is used, and its device
unless ``backend=`` is given). ``kernel.draw(x)`` draws the feature map of one sample. Two kernels:

- ``kind="fidelity"``: k(x, y) = |<phi(x)|phi(y)>|^2, clipped into [0, 1] (a probability: rounding, which
  differs between CPU code paths, can give 1 + 4e-16, and shot noise or zero-noise extrapolation can leave
  the interval; the clip passes gradients inside it).
- ``kind="projected"``: k(x, y) = exp(-gamma * sum_q ||rho_q(x) - rho_q(y)||_F^2), with rho_q the
  one-qubit reduced density matrix of qubit q (Huang et al., Nat. Commun. 12, 2631 (2021)).

Two ways to compute them, chosen from the backend's capabilities (``method="auto"``):

- ``"statevector"`` (exact backends, no shots): ONE broadcast tape ending in ``qml.state()`` for
  all samples, executed by the layer's backend; then the Gram matrix is one complex matrix product
  |S_x S_y^H|^2 (in row blocks with a progress bar when it is large). Cost: N + M circuits. An
  exact backend that cannot return states (Aer's estimator) falls back to compute-uncompute.
- ``"compute-uncompute"`` (shots, noise, hardware): U(x) then U(y)^dagger, the probability of
  |0...0> estimates the fidelity; a square matrix measures only its N(N-1)/2 distinct pairs (the
  diagonal is 1). All pairs are broadcast tapes sent in ONE backend call. The projected kernel
  measures <X_q>, <Y_q>, <Z_q> instead.

Everything stays a torch graph: ``matrix`` is differentiable in the inputs and in the feature
map's trainable parameters (on backends that differentiate what is measured). Under
``torch.autocast`` ``matrix`` computes in float64 (float32 on complex64 backends) and returns
float32, or float64 for float64 inputs (see ``hybridai.core.precision``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import torch

from hybridai.core.errors import (
    ConfigError,
    ShapeError,
    UnsupportedOperationError,
    invalid,
    positive_int,
)
from hybridai.core.precision import keeps_precision, quantum_dtype
from hybridai.quantum.circuits.drawing import draw_tape
from hybridai.quantum.circuits.recording import recording
from hybridai.quantum.circuits.weights import WeightInit
from hybridai.quantum.kernels.gram_blocks import (
    block_rows,
    check_max_memory,
    fidelity_block,
    fidelity_features,
    gram,
    projected_block,
)
from hybridai.quantum.kernels.matrices import target_alignment
from hybridai.quantum.mitigation.folding import inverse
from hybridai.quantum.module import QuantumModule, check_finite
from hybridai.quantum.qiskit_frontend.circuit_function import adopt_kernel_circuit

KINDS = ("fidelity", "projected")
METHODS = ("auto", "statevector", "compute-uncompute")
DEFAULT_MAX_QUBITS = 8


class IQPFeatureMap:
    """PennyLane's IQP (ZZ-type) embedding, re-uploaded: the estimators' default feature map.

    F features on ``n_qubits`` wires: features ``0..n-1`` go into one ``qml.IQPEmbedding``, the
    next ``n`` into a second one on the same wires, and so on (a last short chunk uses the
    first wires). Angles are the features themselves (radians).
    """

    def __init__(self, n_qubits: int) -> None:
        self.n_qubits = positive_int("n_qubits", n_qubits)

    def __call__(self, x: torch.Tensor) -> None:
        import pennylane as qml

        for start in range(0, x.shape[-1], self.n_qubits):
            chunk = x[..., start : start + self.n_qubits]
            if chunk.shape[-1] == 1:
                qml.Hadamard(0)
                qml.RZ(chunk[..., 0], wires=0)
            else:
                qml.IQPEmbedding(chunk, wires=range(chunk.shape[-1]))

    def __repr__(self) -> str:
        return f"IQPFeatureMap(n_qubits={self.n_qubits})"


def as_samples(argument: str, value: Any, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Check and convert ``value`` to a real floating tensor of shape ``[N, F]`` with N, F >= 1."""
    if not torch.is_tensor(value):
        try:
            value = torch.as_tensor(value)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise invalid(
                argument, type(value).__name__, "a torch.Tensor or array of shape [N, F]", ShapeError
            ) from exc
    if value.is_complex() or value.dtype == torch.bool:
        raise invalid(f"{argument}.dtype", value.dtype, "a real floating or integer dtype", ShapeError)
    if value.ndim != 2:
        raise invalid(
            f"{argument}.shape",
            tuple(value.shape),
            "[N, F] (one row per sample; reshape(-1, 1) for one feature)",
            ShapeError,
        )
    if value.shape[0] == 0 or value.shape[1] == 0:
        raise invalid(
            f"{argument}.shape", tuple(value.shape), "[N, F] with at least one sample and one feature", ShapeError
        )
    if not value.is_floating_point():
        value = value.to(dtype or torch.get_default_dtype())
    elif dtype is not None:
        value = value.to(dtype)
    return check_finite(argument, value)


class QuantumKernel(QuantumModule):
    """A quantum kernel from a PennyLane feature map; see the module docstring.

    Args:
        feature_map: PennyLane quantum function ``feature_map(x, **params)`` preparing |phi(x)>;
            ``x`` is a batch ``[N, F]``, index features as ``x[..., i]`` so batches broadcast. A
            ``qml.QNode`` of one gives its function, its device (the backend unless ``backend`` is given)
            and its ``diff_method`` (used when ``diff_method`` is ``"best"`` and the backend accepts it); its
            transforms rewrite the feature map (``hybridai.quantum.pennylane.qnode_transforms``), or are refused by
            name.
            Or a Qiskit ``QuantumCircuit`` as ``FidelityQuantumKernel(feature_map=circuit)`` takes it: the features
            bound to ``circuit.parameters`` in Qiskit's order (``hybridai.quantum.qiskit_frontend.circuit_function``).
        n_qubits: number of wires, labelled ``0 .. n_qubits-1``; at most the backend's ``max_qubits``. Required
            for a quantum function; a Qiskit circuit gives its own.
        weight_shapes: ``{name: shape}`` of trainable parameters passed to ``feature_map`` (default none).
        kind: ``"fidelity"`` (default) or ``"projected"``.
        gamma: RBF width of the projected kernel (1 / squared Frobenius distance units; default 1.0).
        backend: where circuits run (default ``"statevector"``, hybridai's exact torch simulator): a registry
            name, a backend object, a PennyLane device (``qml.device("default.qubit", wires=n)``) or a Qiskit
            backend (``AerSimulator()``, ``FakeManilaV2()``), as for ``QuantumLayer``.
        shots: ``None`` (exact) or the shots per circuit; shots imply compute-uncompute.
        mitigation: ``hybridai.ZNE(...)`` on a backend with noise or shots (compute-uncompute circuits are
            folded); default none.
        method: ``"auto"`` (default), ``"statevector"`` or ``"compute-uncompute"`` (see module docstring).
        diff_method: gradient method, one of the backend's ``capabilities.diff_methods`` (default ``"best"``).
        init: initialiser of every parameter (or ``{name: initialiser}``); default uniform [0, 2*pi).
        n_features: expected input width F; checked on every call when given.
        block_size: at most this many rows of the Gram matrix per block (default 2048), and pairs per tape
            of the compute-uncompute method.
        gram_memory: bytes of working memory for one block of the Gram matrix (``hybridai.quantum.kernels.gram_blocks``;
            default the smaller of 2 GiB and half the free memory); blocks shrink to fit it. The N x M
            result itself is not counted (N * M * 8 bytes in float64).
        progress: show a tqdm bar over blocks; ``None`` (default) shows it when there is more than one block.
        rebind: as for ``QuantumLayer`` (``hybridai.quantum.circuits.rebinding``): ``True`` (default) records
            ``feature_map`` on every call and reuses only what the recorded structure decides; ``False`` reuses
            nothing; ``"unsafe"`` stops running ``feature_map`` once two recordings per shape, dtype and device of
            ``x`` and of every parameter agree, WRONG for a feature map that reads a value or outside state.
        training_params: with a Qiskit circuit, its trainable ``Parameter``s (``TrainableFidelityQuantumKernel``'s
            ``training_parameters``): the entries of one tensor ``weights``; the other parameters are the features.
        **backend_options: passed to the backend (``seed=...`` for reproducible shots); they override the
            options a device or Qiskit backend object implies.
    """

    feature_map: Callable[..., Any]
    kind: str  # "fidelity" or "projected"
    gamma: float  # the RBF width of the projected kernel
    n_features: int | None  # the input width, checked on every call when given
    block_size: int  # rows of the Gram matrix per block, pairs per compute-uncompute tape
    gram_memory: int | None  # bytes of working memory for one block of the Gram matrix (None: the default)
    progress: bool | None  # a tqdm bar over blocks (None: when there is more than one)

    def __init__(
        self,
        feature_map: Callable[..., Any],
        n_qubits: int | None = None,
        weight_shapes: Mapping[str, int | tuple[int, ...]] | None = None,
        *,
        kind: str = "fidelity",
        gamma: float = 1.0,
        backend: str | None = None,
        shots: int | None = None,
        mitigation: Any = None,
        method: str = "auto",
        diff_method: str = "best",
        init: WeightInit | Mapping[str, WeightInit] | None = None,
        n_features: int | None = None,
        block_size: int = 2048,
        gram_memory: int | None = None,
        progress: bool | None = None,
        rebind: bool | str = True,
        training_params: Any = None,
        **backend_options: Any,
    ) -> None:
        super().__init__()
        circuit = adopt_kernel_circuit(
            feature_map, n_qubits, weight_shapes, n_features, training_params=training_params
        )
        if circuit is not None:  # a Qiskit circuit, as FidelityQuantumKernel (trainable: training_params) takes it
            feature_map, n_qubits, weight_shapes, n_features = circuit

        def own(function: Callable[..., Any]) -> bool:
            if kind not in KINDS:
                raise invalid("kind", kind, f"one of {KINDS}")
            if method not in METHODS:
                raise invalid("method", method, f"one of {METHODS}")
            if isinstance(gamma, bool) or not isinstance(gamma, int | float) or not math.isfinite(gamma) or gamma <= 0:
                raise invalid("gamma", gamma, "a positive finite float")
            if progress is not None and not isinstance(progress, bool):
                raise invalid("progress", progress, "None, True or False")
            self.feature_map = function
            self.kind = kind
            self.gamma = float(gamma)
            self.n_features = None if n_features is None else positive_int("n_features", n_features)
            self.block_size = positive_int("block_size", block_size)
            self.gram_memory = check_max_memory(gram_memory, "gram_memory")
            self.progress = progress
            return True  # feature_map(x, **params)

        self.construct(
            feature_map, "feature_map", "a PennyLane quantum function feature_map(x, **params) or a QNode", own,
            n_qubits=n_qubits, weight_shapes=weight_shapes or {}, init=init, backend=backend,
            backend_options=backend_options, shots=shots, diff_method=diff_method, mitigation=mitigation, rebind=rebind,
        )  # fmt: skip
        self._method = method
        self._stateless_backend: str | None = None  # an exact backend found unable to return qml.state()
        self.method  # noqa: B018  (validates method against the backend now, not at the first call)

    # ----------------------------------------------------------------- configuration

    @property
    def method(self) -> str:
        """How the kernel is computed on the current backend: statevector or compute-uncompute."""
        caps = self.resolved_backend.capabilities
        exact = self.shots is None and caps.exact and not caps.noise
        if self._method == "auto":
            return "statevector" if exact and self._stateless_backend != self.backend else "compute-uncompute"
        if self._method == "statevector" and not exact:
            why = f"shots={self.shots}" if self.shots is not None else f"backend {self.backend!r} is not exact"
            raise ConfigError(
                f"method='statevector' needs an exact, noiseless backend and shots=None ({why}); "
                "accepted: method='auto' or 'compute-uncompute'"
            )
        return self._method

    # ----------------------------------------------------------------- circuits

    def operations(self, x: torch.Tensor) -> list[Any]:
        """The feature map's PennyLane operations for a batch ``[N, F]`` (broadcast over N): new objects on
        every call, recorded on this call (re-bound from an earlier recording only with ``rebind="unsafe"``)."""
        return self._operations(x, f"x of shape {tuple(x.shape)}")

    def _operations(self, x: torch.Tensor, shown: str) -> list[Any]:
        """The operations of ``feature_map(x, **params)`` (``shown`` describes ``x`` in errors)."""
        weights = self.weight_tensors(x.dtype)
        hint = f"check the feature width and n_qubits={self.n_qubits}"

        def record() -> tuple[Any, None]:
            return self.record(self.feature_map, "feature_map", (x,), shown, hint, weights), None

        def check(tape: Any) -> None:
            self.check_tape(tape, "feature_map")

        tape, _ = self._rebinding.recorded({"x": x, **weights}, self.shots, record, check)
        if self.qnode_transforms is not None:
            tape = self.qnode_transforms.rewrite(tape)
        return list(tape.operations)  # new objects in every mode: an unsafe template keeps copies of its own

    def draw(self, x: Any, y: Any = None, **qml_draw_kwargs: Any) -> str:
        """The feature map of one sample ``x`` (``[F]`` or ``[1, F]``) with the current parameters, ending in
        ``qml.state()``; with ``y``, the compute-uncompute circuit U(x) U(y)^dagger whose probability of
        |0...0> is k(x, y). Drawn by ``qml.draw`` (``qml_draw_kwargs``: ``decimals``, ``level``, ...)."""
        import pennylane as qml

        ops = self._row_operations(x, "x")
        if y is not None:
            with recording():
                ops = ops + [inverse(op) for op in reversed(self._row_operations(y, "y"))]
        with recording():
            measurement = qml.state() if y is None else qml.probs(wires=self.wires)
            tape = qml.tape.QuantumScript(ops, [measurement])
        return draw_tape(tape, self.wires, **qml_draw_kwargs)

    def _row_operations(self, x: Any, argument: str) -> list[Any]:
        """The feature map's operations for one sample ``[F]`` or ``[1, F]`` (unbroadcast, for drawing)."""
        row = torch.as_tensor(x) if not torch.is_tensor(x) else x
        row = self._check(row.reshape(1, -1) if row.ndim == 1 else row, argument)
        if row.shape[0] != 1:
            raise invalid(f"{argument}.shape", tuple(row.shape), "one sample: [F] or [1, F]", ShapeError)
        return self._operations(row[0], f"{argument} of shape {tuple(row.shape)}")

    @staticmethod
    def _rows(result: Any, tape: Any, n: int) -> torch.Tensor:
        """A backend result as ``[n, ...]`` rows, whether the tape was broadcast or not."""
        result = torch.as_tensor(result)
        if tape.batch_size is None:
            return result.unsqueeze(0).expand(n, *result.shape)
        return result.reshape(n, *result.shape[1:]) if result.ndim > 1 else result.reshape(n)

    def states(self, x: torch.Tensor) -> torch.Tensor:
        """Statevectors ``[N, 2**n_qubits]`` (complex) of a batch ``[N, F]``: one tape, one backend call."""
        import pennylane as qml

        x = self._check(x, "X")
        with recording():
            tape = qml.tape.QuantumScript(self.operations(x), [qml.state()])
        needs_grad = torch.is_grad_enabled() and any(
            torch.is_tensor(p) and p.requires_grad for p in tape.get_parameters(trainable_only=False)
        )
        if needs_grad and (
            "backprop" not in self.resolved_backend.capabilities.diff_methods
            or self.diff_method not in ("best", "backprop")
        ):
            raise ConfigError(
                f"backend={self.backend!r} with diff_method={self.diff_method!r} cannot differentiate the "
                "statevector kernel (qml.state() is differentiated by backprop only); accepted: a backend "
                "with backprop (pennylane:default.qubit, statevector), method='compute-uncompute', or inputs "
                "and parameters that need no gradient (torch.no_grad())"
            )
        (result,) = self.run([tape])
        states = self._rows(result, tape, x.shape[0])
        if states.shape != (x.shape[0], 2**self.n_qubits):
            raise ConfigError(
                f"backend {self.backend!r} returned states of shape {tuple(states.shape)} for qml.state(); "
                f"accepted: [{x.shape[0]}, {2**self.n_qubits}] (a pure-state simulator)"
            )
        return states.to(device=x.device)

    def bloch_vectors(self, x: torch.Tensor) -> torch.Tensor:
        """<X_q>, <Y_q>, <Z_q> of every qubit, ``[N, n_qubits, 3]``; the projected kernel's features."""
        import pennylane as qml

        x = self._check(x, "X")
        n = x.shape[0]
        if self.method == "statevector":
            psi = self.states(x)
            rows = []
            for q in range(self.n_qubits):
                part = psi.reshape(n, 2**q, 2, 2 ** (self.n_qubits - q - 1))
                rho = torch.einsum("nasb,natb->nst", part, part.conj())  # one-qubit reduced density matrix
                rows.append(
                    torch.stack([2 * rho[:, 0, 1].real, -2 * rho[:, 0, 1].imag, (rho[:, 0, 0] - rho[:, 1, 1]).real], -1)
                )
            return torch.stack(rows, 1).to(x.dtype)
        paulis = [qml.PauliX, qml.PauliY, qml.PauliZ]
        with recording():
            measurements = [qml.expval(p(q)) for q in self.wires for p in paulis]
            tape = qml.tape.QuantumScript(self.operations(x), measurements, shots=self.shots)
        (result,) = self.run([tape])
        columns = [self._rows(r, tape, n) for r in result]
        return torch.stack(columns, -1).reshape(n, self.n_qubits, 3).to(dtype=x.dtype, device=x.device)

    # ----------------------------------------------------------------- the kernel

    def _check(self, x: Any, argument: str) -> torch.Tensor:
        x = as_samples(argument, x)
        if self.n_features is not None and x.shape[1] != self.n_features:
            raise invalid(
                f"{argument}.shape",
                tuple(x.shape),
                f"[N, {self.n_features}] (n_features={self.n_features})",
                ShapeError,
            )
        return x

    def check_inputs(self, X: Any, Y: Any = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``X`` ``[N, F]`` and ``Y`` ``[M, F]`` (or None) validated and promoted to one dtype and device."""
        X = self._check(X, "X")
        if Y is None:
            return X, None
        Y = self._check(Y, "Y")
        if Y.shape[1] != X.shape[1]:
            raise invalid("Y.shape", tuple(Y.shape), f"[M, {X.shape[1]}] (the feature width of X)", ShapeError)
        dtype = torch.promote_types(X.dtype, Y.dtype)
        return X.to(dtype), Y.to(device=X.device, dtype=dtype)

    def working_dtype(self, incoming: torch.dtype | None = None) -> torch.dtype:
        """The real dtype the kernel computes in under autocast (float64, or float32 for complex64)."""
        return quantum_dtype(self.resolved_backend)

    @keeps_precision(working_dtype)
    def matrix(self, X: Any, Y: Any = None) -> torch.Tensor:
        """The kernel matrix ``[N, M]`` of ``X`` ``[N, F]`` and ``Y`` ``[M, F]`` (``Y=None``: ``X``).

        Real, in ``X``'s floating dtype (at least float32 under autocast) and on its device;
        dimensionless values in [0, 1].
        Differentiable in ``X``, ``Y`` and the feature map's parameters.
        """
        X, Y = self.check_inputs(X, Y)
        try:
            if self.kind == "projected":
                return self._projected(X, Y)
            if self.method == "statevector":
                return self._fidelity_statevector(X, Y)
        except UnsupportedOperationError:
            # an exact backend that cannot return qml.state() (Aer's estimator, for example): measure instead
            if self._method != "auto" or self.method != "statevector":
                raise
            self._stateless_backend = self.backend
            return self.matrix(X, Y)
        return self._fidelity_compute_uncompute(X, Y)

    def forward(self, X: Any, Y: Any = None) -> torch.Tensor:
        """Same as ``matrix``."""
        return self.matrix(X, Y)

    def _gram(self, block: Callable, left: torch.Tensor, right: torch.Tensor, symmetric: bool, n_columns: int,
              columns_of: Callable, itemsize: int) -> torch.Tensor:  # fmt: skip
        """The matrix of ``gram.gram`` in blocks that fit ``gram_memory``, with a tqdm bar when wanted."""
        rows = block_rows(n_columns, itemsize, self.gram_memory, left.device, self.block_size)

        def starts(blocks: range) -> Any:
            show = self.progress if self.progress is not None else len(blocks) > 1
            if not show:
                return blocks
            from tqdm.auto import tqdm

            return tqdm(blocks, desc=f"kernel {left.shape[0]} x {n_columns}", unit="block")

        return gram(block, left, right, symmetric=symmetric, n_columns=n_columns, columns_of=columns_of, rows=rows,
                    starts=starts)  # fmt: skip

    def _fidelity_statevector(self, X: torch.Tensor, Y: torch.Tensor | None) -> torch.Tensor:
        both = X if Y is None else torch.cat([X, Y])
        states = self.states(both)
        left, right = fidelity_features(states)
        n = X.shape[0]
        m = n if Y is None else Y.shape[0]
        if Y is not None:
            left, right = left[:n], torch.cat([right[n : n + m], right[2 * n + m :]])
        half = right.shape[0] // 2

        def columns(factor: torch.Tensor, c0: int, c1: int) -> torch.Tensor:
            return torch.cat([factor[c0:c1], factor[half + c0 : half + c1]])

        K = self._gram(fidelity_block, left, right, Y is None, m, columns, left.element_size())
        return K.to(X.dtype)

    def _fidelity_compute_uncompute(self, X: torch.Tensor, Y: torch.Tensor | None) -> torch.Tensor:
        import pennylane as qml

        n, m = X.shape[0], (Y if Y is not None else X).shape[0]
        if Y is None:
            rows, cols = torch.triu_indices(n, n, offset=1, device=X.device)
        else:
            rows = torch.arange(n, device=X.device).repeat_interleave(m)
            cols = torch.arange(m, device=X.device).repeat(n)
        other = X if Y is None else Y
        tapes = []
        for start in range(0, rows.numel(), self.block_size):
            r, c = rows[start : start + self.block_size], cols[start : start + self.block_size]
            with recording():
                ops = self.operations(X[r]) + [inverse(op) for op in reversed(self.operations(other[c]))]
                tapes.append(qml.tape.QuantumScript(ops, [qml.probs(wires=self.wires)], shots=self.shots))
        values = []
        if tapes:
            results = self.run(tapes)  # every pair in ONE backend call
            for tape, result, start in zip(tapes, results, range(0, rows.numel(), self.block_size), strict=True):
                size = min(self.block_size, rows.numel() - start)
                values.append(self._rows(result, tape, size)[:, 0])
        flat = torch.cat(values).to(dtype=X.dtype, device=X.device) if values else X.new_zeros(0)
        flat = flat.clamp(0.0, 1.0)  # a probability: rounding, shot noise and extrapolation never leave [0, 1]
        if Y is not None:
            return flat.reshape(n, m)
        K = torch.eye(n, dtype=X.dtype, device=X.device)  # <phi(x)|phi(x)> = 1 for a pure state
        K = K.index_put((rows, cols), flat).index_put((cols, rows), flat)
        return K

    def _projected(self, X: torch.Tensor, Y: torch.Tensor | None) -> torch.Tensor:
        both = X if Y is None else torch.cat([X, Y])
        r = self.bloch_vectors(both).reshape(both.shape[0], -1)
        rx, ry = r[: X.shape[0]], r[X.shape[0] :] if Y is not None else r
        # ||rho(x) - rho(y)||_F^2 = |r(x) - r(y)|^2 / 2 for one-qubit density matrices
        gamma = self.gamma

        def block(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
            return projected_block(left, right, gamma)

        K = self._gram(block, rx, ry, Y is None, ry.shape[0], lambda f, c0, c1: f[c0:c1], rx.element_size())
        return K.to(X.dtype)

    # ----------------------------------------------------------------- training helpers

    def alignment(self, X: Any, y: Any, *, centered: bool = False) -> torch.Tensor:
        """Kernel-target alignment of ``matrix(X)`` with targets ``y``; maximise it to train the map."""
        return target_alignment(self.matrix(X), y, centered=centered)

    def size_description(self) -> str:
        return f"{self.n_qubits} qubits"

    def extra_repr(self) -> str:
        shots = f", shots={self.shots}" if self.shots else ""
        gamma = f", gamma={self.gamma}" if self.kind == "projected" else ""
        return f"n_qubits={self.n_qubits}, kind={self.kind!r}{gamma}, {self.backend_repr()}{shots}"
