"""Quantum layers and kernels shared by threads give the answers they give alone.

PennyLane records operations in ONE process-wide queue, so a tape recorded in one thread used to pick up
the operations another thread built at the same moment (decompositions in the Qiskit conversion,
inverses of the kernel, folds of ZNE), and lose its own. hybridai holds one lock around all of that
(``hybridai.quantum.circuits.recording``); these tests run the same layer or kernel from 4 threads, and force the
worst interleaving on purpose: a second thread builds operations while the first is half-way through
recording its tape.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pennylane as qml
import pytest
import torch

from hybridai import ZNE, QuantumKernel, QuantumLayer

BACKENDS = ["statevector", "aer", "pennylane:default.qubit"]
THREADS, CALLS = 4, 24

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(3))
    qml.StronglyEntanglingLayers(weights, wires=range(3))  # decomposed by the Qiskit conversion
    return qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliZ(1) @ qml.PauliZ(2))


def feature_map(x):
    for i in range(2):
        qml.Hadamard(wires=i)
        qml.RZ(x[..., i], wires=i)
    qml.CNOT(wires=[0, 1])
    qml.Rot(x[..., 0], x[..., 1], 0.3, wires=1)  # decomposed, and inverted by compute-uncompute


def _inputs(t: int, call: int, width: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(100 * t + call % 3)
    return torch.rand(3, width, dtype=torch.float64, generator=g) * 3


def _in_threads(work):
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(work, range(THREADS)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_layer_called_from_four_threads_equals_serial(backend):
    torch.manual_seed(0)
    layer = QuantumLayer(circuit, 3, {"weights": (2, 3, 3)}, backend=backend).double()

    def values_and_grads(x):
        x = x.clone().requires_grad_()
        out = layer(x)
        (grad,) = torch.autograd.grad(out.sum(), x)
        return out.detach(), grad

    serial = {(t, c): values_and_grads(_inputs(t, c, 3)) for t in range(THREADS) for c in range(3)}

    def work(t):
        bad = 0
        for call in range(CALLS):
            out, grad = values_and_grads(_inputs(t, call, 3))
            want_out, want_grad = serial[(t, call % 3)]
            bad += not (torch.allclose(out, want_out, rtol=0, atol=1e-10)
                        and torch.allclose(grad, want_grad, rtol=0, atol=1e-10))  # fmt: skip
        return bad

    assert _in_threads(work) == [0] * THREADS


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_kernel_called_from_four_threads_equals_serial(backend):
    method = "auto" if backend == "statevector" else "compute-uncompute"
    kernel = QuantumKernel(feature_map, 2, backend=backend, method=method)
    with torch.no_grad():
        serial = {(t, c): kernel.matrix(_inputs(t, c, 2)) for t in range(THREADS) for c in range(3)}

    def work(t):
        bad = 0
        with torch.no_grad():
            for call in range(CALLS):
                bad += not torch.allclose(kernel.matrix(_inputs(t, call, 2)), serial[(t, call % 3)], atol=1e-10)
        return bad

    assert _in_threads(work) == [0] * THREADS


def test_layers_and_kernels_on_different_backends_from_four_threads_equal_serial():
    """Two threads convert circuits for Aer (decompositions build operations) while two record kernel tapes."""
    torch.manual_seed(0)
    layer = QuantumLayer(circuit, 3, {"weights": (2, 3, 3)}, backend="aer").double()
    kernel = QuantumKernel(feature_map, 2)  # statevector: records a tape per call
    with torch.no_grad():
        serial = {(t, c): (layer if t % 2 else kernel)(_inputs(t, c, 3 if t % 2 else 2)) for t in range(4)
                  for c in range(3)}  # fmt: skip

    def work(t):
        bad = 0
        with torch.no_grad():
            for call in range(CALLS):
                try:
                    out = (layer if t % 2 else kernel)(_inputs(t, call, 3 if t % 2 else 2))
                    bad += not torch.allclose(out, serial[(t, call % 3)], rtol=0, atol=1e-10)
                except Exception:  # a tape that caught another thread's operations
                    bad += 1
        return bad

    assert _in_threads(work) == [0] * THREADS


def _while_recording(build):
    """Run ``build()`` in this thread while another thread is half-way through recording a tape (it pauses
    until ``build`` returns, or 0.5 s); both results, and the value the recorded circuit must give."""
    started, go = threading.Event(), threading.Event()

    def slow(inputs, weights):
        qml.RY(inputs[..., 0], wires=0)
        started.set()
        go.wait(timeout=0.5)  # under hybridai's lock ``build`` waits for this recording instead: no deadlock
        qml.RX(weights[0], wires=1)
        qml.CNOT(wires=[0, 1])
        return qml.expval(qml.PauliZ(1))

    torch.manual_seed(1)
    recorder = QuantumLayer(slow, 2, {"weights": 1}).double()
    result = {}

    def record():
        try:
            with torch.no_grad():
                result["recorded"] = recorder(torch.tensor([[0.4]], dtype=torch.float64))
        except Exception as exc:  # a corrupted tape: reported by the assertion below
            result["recorded"] = exc

    thread = threading.Thread(target=record)
    thread.start()
    assert started.wait(timeout=10)
    try:
        with torch.no_grad():
            result["built"] = build()
    finally:
        go.set()
        thread.join(timeout=10)
    want = torch.cos(torch.tensor(0.4, dtype=torch.float64)) * torch.cos(recorder.weights.detach()[0].double())
    return result, want.item()


def two_qubits(inputs, weights):
    qml.Rot(*weights, wires=0)  # decomposed by the Qiskit conversion
    qml.CNOT(wires=[0, 1])
    qml.RY(inputs[..., 0], wires=1)
    return qml.expval(qml.PauliZ(0) @ qml.PauliZ(1))


@pytest.mark.parametrize("mitigation", [None, ZNE()])
def test_aer_circuit_evaluated_while_another_thread_records_is_right(mitigation):
    """A 2-qubit circuit, recorded before, executed on Aer (with ZNE: folded too) while a tape is recorded."""
    options = {"depolarizing": (0.01, 0.03)} if mitigation else {}
    layer = QuantumLayer(two_qubits, 2, {"weights": 3}, backend="aer", mitigation=mitigation, **options).double()
    x = torch.tensor([[0.7]], dtype=torch.float64)
    with torch.no_grad():
        alone = layer(x)
    tape = layer.tape(x)

    result, want = _while_recording(lambda: layer.run([tape])[0])

    assert isinstance(result["built"], torch.Tensor), result["built"]
    assert result["built"].item() == pytest.approx(alone.item(), abs=1e-12)
    assert isinstance(result["recorded"], torch.Tensor), result["recorded"]
    assert result["recorded"].item() == pytest.approx(want, abs=1e-12)


def test_kernel_inverses_built_while_another_thread_records_are_right():
    kernel = QuantumKernel(feature_map, 2, backend="pennylane:default.qubit", method="compute-uncompute")
    X = torch.rand(3, 2, dtype=torch.float64)
    with torch.no_grad():
        alone = kernel.matrix(X)
    ops = kernel.operations(X[[0, 1]])  # recorded before; inverted while the other thread records

    def uncompute():
        from hybridai.quantum.mitigation.folding import inverse

        inverses = [inverse(op) for op in reversed(ops)]
        tape = qml.tape.QuantumScript(ops + inverses, [qml.probs(wires=[0, 1])])
        return kernel.run([tape])[0][..., 0]

    result, want = _while_recording(uncompute)

    assert isinstance(result["built"], torch.Tensor), result["built"]
    torch.testing.assert_close(result["built"], torch.ones(2, dtype=torch.float64), rtol=0, atol=1e-12)
    assert torch.allclose(torch.diagonal(alone), torch.ones(3, dtype=torch.float64))
    assert isinstance(result["recorded"], torch.Tensor), result["recorded"]
    assert result["recorded"].item() == pytest.approx(want, abs=1e-12)
