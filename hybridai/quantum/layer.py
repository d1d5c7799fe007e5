"""QuantumLayer: a PennyLane quantum function as a trainable torch layer.

``qfunc(inputs, **weights)`` is an ordinary PennyLane quantum function (or a QNode, as
``qml.qnn.TorchLayer`` takes: its function is used, and its device unless ``backend=`` is given). The
layer records it as a PennyLane tape with the whole batch broadcast (never a Python loop over samples)
and hands the tape to its quantum backend. Inside ``qfunc`` index features as ``inputs[..., i]`` so that
batches broadcast. Outputs come in the input's dtype and on its device, shaped as TorchLayer shapes them:

- a single ``qml.expval``/``qml.var`` (not in a list): ``[B]`` for inputs ``[B, F]``, ``[]`` for ``[F]``;
- anything else (a list or tuple of measurements, even of one, or ``qml.probs``): ``[B, n_outputs]``
  (``[n_outputs]`` for ``[F]``), the measurements' values side by side (``qml.probs`` of k wires gives
  2**k columns).

A circuit without inputs, ``qfunc(**weights)`` (its first argument is one of the weights, or it takes
none), is called as ``layer()`` and returns ``[]`` or ``[n_outputs]`` by the same rule. Inputs and
weights holding NaN or infinity are refused. ``layer.draw(x)`` draws the circuit of one input row with
the current weights (``qml.draw(layer)`` cannot see inside a layer).

Under ``torch.autocast`` the layer keeps its own precision (``hybridai.core.precision``): autocast
is off inside it, the circuit runs in float64/complex128 (float32 when the backend simulates
in complex64) and the outputs come back in float32 (float64 for float64 inputs), never in
bf16/fp16; the next classical layer casts them down as autocast does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import torch

from hybridai.core.errors import ConfigError, ShapeError, invalid, positive_int
from hybridai.core.precision import keeps_precision, quantum_dtype
from hybridai.quantum.circuits.drawing import draw_tape
from hybridai.quantum.circuits.weights import WeightInit, takes_inputs
from hybridai.quantum.module import QuantumModule, check_finite
from hybridai.quantum.qiskit_frontend.circuit_function import adopt_layer_circuit, torch_connector_init

MEASUREMENTS = ("ExpectationMP", "VarianceMP", "ProbabilityMP")
SCALAR_MEASUREMENTS = ("ExpectationMP", "VarianceMP")  # one value per sample: [B] when returned alone


class QuantumLayer(QuantumModule):
    """A trainable quantum circuit; see the module docstring.

    Args:
        qfunc: PennyLane quantum function ``qfunc(inputs, **weights)`` (or ``qfunc(**weights)``, a circuit
            without inputs) returning ``qml.expval``/``qml.var``/``qml.probs`` measurements (one or a sequence;
            see the module docstring for the output shape); or a ``qml.QNode`` of such a function, whose device
            (with its shots and random generator) is the backend unless ``backend`` is given, and whose ``diff_method``
            is used when ``diff_method`` is left at ``"best"`` (refused by name when the backend lacks it); its other
            options (``gradient_kwargs``, ``max_diff``, ...) are refused by name unless PennyLane's defaults
            (``hybridai.quantum.framework_objects``). The QNode's own transforms
            (``@qml.transforms.merge_rotations``, ``qml.noise.add_noise(qnode, ...)``) apply on any backend, or are
            refused by name (``hybridai.quantum.pennylane.qnode_transforms``). Or a Qiskit ``QuantumCircuit`` with
            ``Parameter``s, taken as ``EstimatorQNN`` + ``TorchConnector`` take it (``input_params``, ``weight_params``,
            ``observables``; ``hybridai.quantum.qiskit_frontend.circuit_function``): inputs
            ``[B, len(input_params)]``, one trainable tensor ``weights`` of shape ``(len(weight_params),)``
            initialised uniform in [-1, 1] as TorchConnector does, outputs ``[B, n_observables]``.
        n_qubits: number of wires, labelled ``0 .. n_qubits-1``; at most the backend's
            ``capabilities.max_qubits`` (5 on ``aer:fake_manila``). Required for a quantum function; a Qiskit
            circuit gives its own (Qiskit qubit q is wire q).
        weight_shapes: ``{name: shape}`` of the trainable arrays passed to ``qfunc`` (default none).
        backend: where the circuit runs (default ``"statevector"``, hybridai's exact torch simulator): a
            registry name (``"pennylane:default.qubit"``, ``"aer:fake_manila"``, ...), a backend object
            (``hybridai.backends.get(...)``), a PennyLane device (``qml.device("lightning.qubit", wires=2)``:
            ``"pennylane:lightning.qubit"`` with its shots; a device with transforms, ``qml.noise.insert(dev, ...)``,
            runs as itself: ``"pennylane:default.mixed"`` with ``device=`` a copy of it) or a Qiskit backend
            (``AerSimulator()``: ``"aer"`` with its noise model; ``FakeManilaV2()``: ``"aer:fake_manila"``).
        shots: ``None`` for exact expectations, or a number of shots per evaluation (overrides the backend's).
        diff_method: gradient method, one of the backend's ``capabilities.diff_methods`` (default ``"best"``:
            the backend's own choice).
        init: initialiser applied in place to every weight (or ``{name: initialiser}``);
            default uniform angles in [0, 2*pi).
        n_inputs: expected input width; learnt from the first batch when ``None``.
        mitigation: ``hybridai.ZNE(...)`` on any backend with noise or shots (``aer:...``, ``ibm:...``,
            ``pennylane:default.mixed``, a plugin), applied around the backend; default none.
        rebind: ``True`` (default): ``qfunc`` is recorded on every call (whatever it reads, values or outside
            state, is read again) and only what the recorded structure decides is reused: the tape's checks and
            broadcast sizes (``circuits.rebinding``). ``False``: recorded on every call, nothing reused.
            ``"unsafe"``: ``qfunc`` is not run again once two recordings per input shape agree, the new inputs and
            weights are put into the recorded circuit; WRONG for a ``qfunc`` that reads a value (``torch.equal``,
            ``str(x)``, ``len(x.nonzero())``, ...) or outside state (a flag, ``self.training``, grad mode, a random
            branch): what it read on its first calls is what every later call gets.
        input_params: with a Qiskit circuit, the ``Parameter``s bound to the input columns, in order (default none).
        weight_params: with a Qiskit circuit, the ``Parameter``s bound to the entries of ``weights`` (default none).
            Every circuit parameter is in exactly one of the two lists.
        observables: with a Qiskit circuit, a ``SparsePauliOp`` (or ``Pauli``, or another ``BaseOperator``) on its
            qubits, or a list of them, one output each; default Z⊗Z⊗…⊗Z over all qubits (EstimatorQNN's default).
        **backend_options: passed to the backend (``seed=...`` for example); they override the options a
            device or Qiskit backend object implies.
    """

    qfunc: Callable[..., Any]
    takes_inputs: bool  # whether qfunc's first argument receives the inputs (else: a circuit without inputs)
    n_inputs: int | None  # the input width, learnt from the first batch when not given
    n_outputs: int | None  # the output width, known after the first call

    def __init__(
        self,
        qfunc: Callable[..., Any],
        n_qubits: int | None = None,
        weight_shapes: Mapping[str, int | tuple[int, ...]] | None = None,
        *,
        backend: str | None = None,
        shots: int | None = None,
        diff_method: str = "best",
        init: WeightInit | Mapping[str, WeightInit] | None = None,
        n_inputs: int | None = None,
        mitigation: Any = None,
        rebind: bool | str = True,
        input_params: Any = None,
        weight_params: Any = None,
        observables: Any = None,
        **backend_options: Any,
    ) -> None:
        super().__init__()
        circuit = adopt_layer_circuit(qfunc, n_qubits, weight_shapes, n_inputs, input_params=input_params,
                                      weight_params=weight_params, observables=observables)  # fmt: skip
        if circuit is not None:  # a Qiskit circuit, as EstimatorQNN + TorchConnector take it
            qfunc, n_qubits, weight_shapes, n_inputs = circuit
            init = torch_connector_init if init is None else init
        shapes = {} if weight_shapes is None else weight_shapes

        def own(qfunc: Callable[..., Any]) -> bool:
            self.qfunc = qfunc
            self.takes_inputs = takes_inputs(qfunc, shapes)
            self.n_inputs = None if n_inputs is None else positive_int("n_inputs", n_inputs)
            if self.n_inputs is not None and not self.takes_inputs:
                raise invalid("n_inputs", n_inputs, "None: qfunc takes no inputs (its arguments are the weights)")
            self.n_outputs = None
            return self.takes_inputs

        self.construct(
            qfunc, "qfunc", "a PennyLane quantum function qfunc(inputs, **weights) or a QNode", own,
            n_qubits=n_qubits, weight_shapes=shapes, init=init, backend=backend, backend_options=backend_options,
            shots=shots, diff_method=diff_method, mitigation=mitigation, rebind=rebind,
        )  # fmt: skip

    def _check_inputs(self, inputs: Any, argument: str = "inputs") -> torch.Tensor:
        if not torch.is_tensor(inputs):
            raise invalid(argument, type(inputs).__name__, "a torch.Tensor of shape [B, F] or [F]", ShapeError)
        shape = tuple(inputs.shape)
        if inputs.ndim not in (1, 2):
            seam = (
                "; a time-major spiking tensor [T, B, F] goes through a decoder first "
                "(hybridai.SpikeCountDecoder, RateDecoder or MembraneDecoder)"
                if inputs.ndim == 3
                else ""
            )
            raise invalid(f"{argument}.shape", shape, f"[B, F] or [F]{seam}", ShapeError)
        if inputs.is_complex():
            raise invalid(f"{argument}.dtype", inputs.dtype, "a real floating or integer dtype", ShapeError)
        batch = inputs if inputs.ndim == 2 else inputs.unsqueeze(0)
        if batch.shape[0] == 0 or batch.shape[1] == 0:
            raise invalid(f"{argument}.shape", shape, "at least one sample and one feature", ShapeError)
        if self.n_inputs is not None and batch.shape[1] != self.n_inputs:
            raise invalid(f"{argument}.shape", shape, f"[B, {self.n_inputs}] or [{self.n_inputs}]", ShapeError)
        check_finite(argument, inputs)
        return batch if batch.is_floating_point() else batch.to(torch.get_default_dtype())

    def tape(self, inputs: torch.Tensor | None = None) -> Any:
        """The PennyLane tape of this layer for a batch ``[B, F]`` (broadcast over B); no inputs for a
        circuit without them."""
        return self._recorded(None if not self.takes_inputs else self._check_inputs(inputs), inputs)[0]

    def _recorded(self, batch: torch.Tensor | None, given: Any = None) -> tuple[Any, bool]:
        """``(tape, single)``: the tape of ``qfunc`` on ``batch`` (``[B, F]``, one row ``[F]``, or None for a
        circuit without inputs, where ``given`` must be None too), and whether ``qfunc`` returned one
        expectation or variance alone (not in a sequence): outputs without a column axis, as TorchLayer's."""
        if batch is None:
            self._refuse_inputs(given)
        weights = self.weight_tensors(batch.dtype if batch is not None else None)
        arguments = dict(weights) if batch is None else {"inputs": batch, **weights}

        def record() -> tuple[Any, bool]:
            returned: list[Any] = []

            @functools.wraps(self.qfunc)  # its signature names the inputs in messages
            def qfunc(*args: Any, **weights: Any) -> Any:
                returned.append(self.qfunc(*args, **weights))
                return returned[-1]

            if batch is None:
                tape = self.record(qfunc, "qfunc", (), "no inputs", "check weight_shapes", weights)
            else:
                hint = f"check the input width (n_qubits={self.n_qubits}) and weight_shapes"
                shown = f"inputs of shape {tuple(batch.shape)}"
                tape = self.record(qfunc, "qfunc", (batch,), shown, hint, weights)
            kinds = [type(m).__name__ for m in tape.measurements]
            single = len(kinds) == 1 and kinds[0] in SCALAR_MEASUREMENTS and not isinstance(returned[-1], list | tuple)
            return tape, single

        return self._rebinding.recorded(arguments, self.shots, record, self._check_tape)

    def _check_tape(self, tape: Any) -> None:
        """Refuse a recorded tape with measurements other than expval, var and probs, or on other wires."""
        kinds = [type(m).__name__ for m in tape.measurements]
        if not kinds or any(k not in MEASUREMENTS for k in kinds):
            raise ConfigError(
                f"qfunc returned measurements {kinds}; accepted: qml.expval, qml.var or qml.probs "
                "(one, or a sequence of them)"
            )
        self.check_tape(tape, "qfunc")

    def draw(self, x: torch.Tensor | None = None, **qml_draw_kwargs: Any) -> str:
        """The circuit of one input row ``x`` (``[F]`` or ``[1, F]``; none for a circuit without inputs) with
        the current weights, drawn by ``qml.draw`` (``qml_draw_kwargs``: ``decimals``, ``level``, ...) as it
        draws the same circuit as a QNode on ``default.qubit``; ``print(layer.draw(x[0]))``."""
        if not self.takes_inputs:
            tape, _ = self._recorded(None, x)
            return draw_tape(tape, self.wires, **qml_draw_kwargs)
        if x is None:
            raise invalid("x", None, f"one input row [F] (qfunc takes inputs; n_inputs={self.n_inputs})", ShapeError)
        batch = self._check_inputs(x, "x")
        if batch.shape[0] != 1:
            accepted = "one row: [F] or [1, F] (layer.draw(x[i]) for sample i)"
            raise invalid("x.shape", tuple(x.shape), accepted, ShapeError)
        tape, _ = self._recorded(batch[0])
        return draw_tape(tape, self.wires, **qml_draw_kwargs)

    def _refuse_inputs(self, inputs: Any) -> None:
        if inputs is not None:
            shown = tuple(inputs.shape) if torch.is_tensor(inputs) else type(inputs).__name__
            raise invalid(
                "inputs", shown, f"none: qfunc takes no inputs (weights {sorted(self.weight_shapes)}); call layer()",
                ShapeError,
            )  # fmt: skip

    def run(self, tapes: list[Any]) -> list[Any]:
        """Results of ``tapes`` on this layer's backend, through the QNode's own transforms when it has some
        (``hybridai.quantum.pennylane.qnode_transforms``: transformed, run in one backend call, post-processed)."""
        if self.qnode_transforms is None:
            return super().run(tapes)
        return self.qnode_transforms.run(tapes, super().run)

    def working_dtype(self, incoming: torch.dtype | None = None) -> torch.dtype:
        """The real dtype this layer computes in under autocast (float64, or float32 for complex64)."""
        return quantum_dtype(self.resolved_backend)

    @keeps_precision(working_dtype)
    def forward(self, inputs: torch.Tensor | None = None) -> torch.Tensor:
        if not self.takes_inputs:
            return self._forward_without_inputs(inputs)
        batch = self._check_inputs(inputs)
        assert inputs is not None  # refused by _check_inputs otherwise
        tape, single = self._recorded(batch)
        (result,) = self.run([tape])
        parts = [torch.as_tensor(p) for p in (result if isinstance(result, tuple | list) else (result,))]
        size = batch.shape[0]
        if tape.batch_size is not None and all(p.shape == (size,) for p in parts):
            out = torch.stack(parts, dim=1)  # one value per sample and measurement (expectations): one op
        else:
            columns = [
                p.reshape(1, -1).expand(size, -1) if tape.batch_size is None else p.reshape(size, -1) for p in parts
            ]
            out = torch.cat(columns, dim=1)
        out = out.to(dtype=batch.dtype, device=batch.device)
        self.n_inputs = batch.shape[1]
        self.n_outputs = out.shape[1]
        out = out[:, 0] if single else out
        return out if inputs.ndim == 2 else out.squeeze(0)

    def _forward_without_inputs(self, inputs: Any) -> torch.Tensor:
        """``[n_outputs]`` (``[]`` for one expectation alone) of a circuit without inputs, in the dtype and on
        the device of its weights."""
        tape, single = self._recorded(None, inputs)
        (result,) = self.run([tape])
        parts = result if isinstance(result, tuple | list) else (result,)
        first = next(iter(self.parameters()), None)
        dtype = first.dtype if first is not None else torch.get_default_dtype()
        device = first.device if first is not None else torch.device("cpu")
        out = torch.cat([torch.as_tensor(p).reshape(-1) for p in parts]).to(dtype=dtype, device=device)
        self.n_outputs = out.shape[0]
        return out[0] if single else out

    def size_description(self) -> str:
        return f"{self.n_qubits} qubits"

    def extra_repr(self) -> str:
        shots = f", shots={self.shots}" if self.shots else ""
        return f"n_qubits={self.n_qubits}, weight_shapes={self.weight_shapes}, {self.backend_repr()}{shots}"
