"""What the ``density`` backend reuses between calls and backends: conversions per tape structure, noise models per
fake device, PTMs per error content; and how sampled values are assembled from basis groups. Values stay equal to
``aer``'s and nothing one backend does leaks into another."""

import numpy as np
import pennylane as qml
import pytest
import torch

from hybridai import backends
from hybridai.core.errors import UnsupportedOperationError
from hybridai.core.execution import ExecutionConfig
from hybridai.quantum.density import converting
from hybridai.quantum.qiskit_frontend.conversion import convert

CONFIG = ExecutionConfig((0, 1))


def tape(x: float, y: torch.Tensor, measurement=None):
    def qfunc():
        qml.RY(x, wires=0)
        qml.CNOT(wires=[0, 1])
        qml.RX(y, wires=1)
        return measurement() if measurement else qml.expval(qml.PauliZ(1))

    return qml.tape.make_qscript(qfunc)()


def values(name: str, tapes, config=CONFIG):
    return [torch.as_tensor(r) for r in backends.get(name).execute(tapes, config).results]


def test_tapes_of_one_structure_share_a_conversion_and_keep_their_own_values():
    y = torch.tensor([0.3, 1.1], dtype=torch.float64, requires_grad=True)
    first, second = tape(0.4, y), tape(-1.2, y * 2)
    a, b = converting.converted(first, [0, 1]), converting.converted(second, [0, 1])
    assert a.circuit is b.circuit and a.observables is b.observables and a.key == convert(first, [0, 1]).key
    assert float(a.params[0]) == 0.4 and float(b.params[0]) == -1.2 and torch.equal(b.params[1], y * 2)
    skeletons = list(converting._SKELETONS.values())
    assert skeletons and all(s.params == [] for s in skeletons)  # no tensor (nor its graph) is kept
    for got, want in zip(values("density:fake_manila", [first, second]), values("aer:fake_manila", [first, second]),
                         strict=True):  # fmt: skip
        torch.testing.assert_close(got.detach(), want.detach(), rtol=0, atol=1e-10)


@pytest.mark.parametrize(
    "other",
    [
        lambda: qml.expval(qml.PauliX(1)),  # another observable
        lambda: qml.expval(0.5 * qml.PauliZ(1) + 0.25 * qml.PauliY(0)),  # another Hamiltonian
        lambda: qml.expval(0.5 * qml.PauliZ(1) + 0.2500001 * qml.PauliX(0)),  # its coefficients, exactly
        lambda: qml.probs(wires=[1]),
        lambda: qml.probs(wires=[1, 0]),  # the wires' order matters
    ],
)
def test_a_different_measurement_is_a_different_structure(other):
    reference = tape(0.4, torch.tensor(0.3), lambda: qml.expval(0.5 * qml.PauliZ(1) + 0.25 * qml.PauliX(0)))
    changed = tape(0.4, torch.tensor(0.3), other)
    assert converting.structure_key(changed, [0, 1])[0] != converting.structure_key(reference, [0, 1])[0]
    torch.testing.assert_close(values("density:fake_manila", [changed])[0],
                               values("aer:fake_manila", [changed])[0], rtol=0, atol=1e-10)  # fmt: skip


def test_what_convert_refuses_is_still_refused_with_its_reason():
    refused = tape(0.4, torch.tensor(0.3), lambda: qml.state())
    assert converting.structure_key(refused, [0, 1]) is None
    with pytest.raises(UnsupportedOperationError, match="StateMP"):
        converting.converted(refused, [0, 1])


def test_backends_of_one_device_share_ptms_but_each_owns_its_noise_model():
    from qiskit_aer.noise import depolarizing_error

    one, two = backends.get("density:fake_manila"), backends.get("density:fake_manila")
    assert one.noise_model is not two.noise_model
    assert one.noise.ptm("cx", (0, 1)) is two.noise.ptm("cx", (0, 1))  # computed once, read-only
    assert not one.noise.ptm("cx", (0, 1)).flags.writeable
    assert one.noise.ptm("cx", (0, 1)) is not one.noise.ptm("cx", (1, 2))  # each pair's own calibration
    one.noise_model.add_all_qubit_quantum_error(depolarizing_error(0.5, 1), ["h"])
    assert "h" in one.noise_model.noise_instructions
    assert "h" not in backends.get("density:fake_manila").noise_model.noise_instructions  # nothing leaks


def test_ptms_are_shared_by_content_not_by_name():
    low, same, high = (backends.get("density", depolarizing=p) for p in ((0.01, 0.02), (0.01, 0.02), (0.01, 0.05)))
    assert low.noise.ptm("cx", (0, 1)) is same.noise.ptm("cx", (0, 1))
    assert not np.array_equal(low.noise.ptm("cx", (0, 1)), high.noise.ptm("cx", (0, 1)))


def test_sampled_values_put_identity_terms_in_exactly():
    def qfunc():
        qml.RY(0.7, wires=0)
        qml.CNOT(wires=[0, 1])
        return (qml.expval(qml.Identity(0)), qml.expval(2.0 * qml.Identity(1) - 0.5 * qml.PauliZ(0)),
                qml.expval(qml.PauliX(0) @ qml.PauliX(1)))  # fmt: skip

    config = CONFIG.replace(shots=4000, seed=3)
    backend = backends.get("density:fake_manila")
    identity, mixed, xx = backend.execute([qml.tape.make_qscript(qfunc)()], config).results[0]
    exact = backend.execute([qml.tape.make_qscript(qfunc)()], CONFIG).results[0]
    assert float(identity) == 1.0  # not sampled
    assert abs(float(mixed) - float(exact[1])) < 5 * 0.5 / 4000**0.5 + 0.05  # readout errors shift Z a little
    assert abs(float(xx) - float(exact[2])) < 5 / 4000**0.5 + 0.05
    again = backend.execute([qml.tape.make_qscript(qfunc)()], config).results[0]
    assert all(torch.equal(a, b) for a, b in zip(again, (identity, mixed, xx), strict=True))  # seeded
