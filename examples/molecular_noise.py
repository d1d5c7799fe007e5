"""Molecular dynamics on quantum-kernel surfaces measured on a noisy IBM device, with and without ZNE.

Two potential-energy surfaces, all data generated here offline (PennyLane qchem, STO-3G, FCI, no pyscf;
energies cached in ``--out``/qchem_energies.json):

- H2, one coordinate (the bond length), 4-qubit feature map: the quick case (``--quick`` runs only it);
- linear H-H-H+, two coordinates (the two bond lengths), 6-qubit feature map of two mirror-invariant
  features (mean bond length and squared asymmetry: swapping the bonds gives the same molecule), so
  each distinct molecule of the training and tabulation grids is measured once.

Each surface is learned by kernel ridge regression with a classical RBF kernel and with the quantum
fidelity and projected kernels of ``molecular_dynamics.ReuploadingMap`` (its CNOTs follow the device's
couplings, so no SWAPs are needed). Every quantum kernel is measured four ways ("routes"):

- exact: statevectors (hybridai's ``statevector`` simulator);
- noisy: a fake IBM device (FakeJakarta: its noise model, 7 qubits) with seeded shots, simulated by
  ``density:fake_jakarta`` (hybridai's density matrices, the noise model read as Aer reads it; the default)
  or, with ``--route aer``, by ``aer:fake_jakarta`` (Qiskit Aer: the same noise model, gates and seeds; slower);
- ZNE Richardson: the same with ``hybridai.ZNE()`` (global folding at scale factors 1, 3, 5);
- ZNE exponential: the SAME folded measurements extrapolated exponentially (Mitiq's fit with a known
  asymptote: 1/2^n for the probability of |0...0>, 0 for Pauli expectations).

Hyper-parameters: each kernel's feature-map bandwidth (and the projected kernel's gamma) is chosen by
cross-validation over 5 bandwidths: on exact Gram matrices for the exact route, on training Gram
matrices measured on the device (unmitigated) for the device routes; ZNE reuses that choice, and the
device scan's cost is printed apart. Then EVERY route chooses its ridge alpha by the same
cross-validation (same folds, scoring and alpha grid) on its own measured training Gram matrix, after
``hybridai.psd_repair`` (symmetrise, clip negative eigenvalues; the table says what the repair changed).

A learned surface is tabulated on a grid (the model's predictions there: the measured kernel rows of
the grid points against the training points) and interpolated by a cubic spline, as one would to
run dynamics on hardware-learned surfaces without measuring circuits at every time step. Test
energies and forces (central differences of FCI energies) are compared with that spline, and
velocity-Verlet dynamics run on it and on the exact FCI surface.

One table, one PNG (``molecular_noise.png`` in ``--out``) and a plain verdict are printed. It
measures the claim that quantum kernels improve prediction accuracy by about 12 %; it does not assume it.

Run: ``.venv/bin/python examples/molecular_noise.py --out out`` (both systems) or ``--quick`` (H2); ``--route aer``
measures on Qiskit Aer instead of hybridai's density matrices. Measured on 2 shared CPU cores, 1 torch thread: the
full run 23 s with the energy cache filled (``--route aer``: 107 s), about 100 s more to fill an empty cache.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

if str(Path(__file__).resolve().parent) not in sys.path:  # the sibling example, also when loaded by path
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from molecular_dynamics import (  # noqa: E402
    MU,
    EnergyCache,
    ReuploadingMap,
    energies_and_forces,
    h2_geometry,
    spline_energy,
    velocity_verlet,
)

NOISY_DEVICES = {"density": "density:fake_jakarta", "aer": "aer:fake_jakarta"}  # --route: what simulates it
SIMULATORS = {"density": "hybridai's density matrices in torch", "aer": "Qiskit Aer"}
SCALE_FACTORS = (1.0, 3.0, 5.0)
M_H = 2 * MU  # mass of a hydrogen atom, electron masses
CHAIN = ((0, 1), (1, 2), (2, 3))  # 4 qubits: a chain of fake_jakarta's couplings (0-1-3-5)
TREE = ((0, 1), (1, 2), (1, 3), (3, 4), (4, 5))  # 6 qubits: fake_jakarta's H-shaped coupling map less one qubit
ALPHAS = np.logspace(-12, -1, 12)
PROJECTED_GAMMAS = (0.3, 1.0, 3.0)
RBF_GAMMAS = np.logspace(-2, 2, 9)
ROUTES = ("exact", "noisy", "ZNE Richardson", "ZNE exponential")
KERNELS = ("quantum fidelity", "quantum projected")
COLUMNS = (
    "system",
    "kernel",
    "route",
    "hyper-parameters (CV)",
    "Gram err F",
    "Gram err max",
    "PSD repair |dK|_F (neg. eigs)",
    "E MAE mHa",
    "F MAE mHa/A",
    "max |r - r_exact| A",
    "E drift mHa",
    "circuits",
    "shots",
    "wall s",
)


# ---------------------------------------------------------------------------------------- systems


@dataclass
class System:
    """A potential-energy surface: exact training and test data, the grid learned surfaces are tabulated
    on, the exact surface for dynamics, and the dynamics' start and (inverse) masses."""

    name: str
    description: str
    n_qubits: int
    pairs: tuple
    x_train: np.ndarray  # [N, D] Angstrom
    e_train: np.ndarray  # [N] Hartree
    x_test: np.ndarray  # [T, D]
    e_test: np.ndarray  # [T]
    f_test: np.ndarray  # [T, D] Hartree/Angstrom, central differences of FCI energies
    axes: list[np.ndarray]  # the tabulation grid of learned surfaces, one axis per coordinate
    exact: Callable  # the FCI surface: a spline, x [N, D] -> E [N]
    r0: np.ndarray  # start of the dynamics (at rest), Angstrom
    inverse_mass: np.ndarray  # D x D, 1/electron masses
    features: Callable[[np.ndarray], np.ndarray] = lambda x: x  # what the kernels see of coordinates [N, D]

    @property
    def x_grid(self) -> np.ndarray:
        mesh = np.meshgrid(*self.axes, indexing="ij")
        return np.stack([m.reshape(-1) for m in mesh], 1)

    @property
    def f_train(self) -> np.ndarray:
        return self.features(self.x_train)

    @functools.cached_property
    def f_grid(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct features of the grid points (each measured once) and, per grid point, its row there."""
        distinct, inverse = np.unique(self.features(self.x_grid).round(12), axis=0, return_inverse=True)
        return distinct, inverse.reshape(-1)


def grid_surface(axes: list[np.ndarray], values: np.ndarray) -> Callable:
    """A differentiable surface x ``[N, D]`` -> E ``[N]`` through energies on a grid: a cubic spline for
    D = 1 (``molecular_dynamics.spline_energy``), a bicubic one for D = 2."""
    if len(axes) == 1:
        curve = spline_energy(axes[0], values)
        return lambda x: curve(x[:, 0])
    from scipy.interpolate import RectBivariateSpline

    spline = RectBivariateSpline(axes[0], axes[1], np.reshape(values, (len(axes[0]), len(axes[1]))))

    class Bicubic(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            a, b = x.detach().numpy().T
            return torch.as_tensor(spline.ev(a, b), dtype=torch.float64)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            a, b = x.detach().numpy().T
            slope = np.stack([spline.ev(a, b, dx=1), spline.ev(a, b, dy=1)], 1)
            return grad[:, None] * torch.as_tensor(slope, dtype=torch.float64)

    return Bicubic.apply


def test_forces(cache: EnergyCache, geometry: Callable, x_test: np.ndarray, desc: str) -> np.ndarray:
    """F = -dE/dx at ``x_test`` ``[T, D]`` by central differences (h = 1e-4 Angstrom) of FCI energies."""
    h = 1e-4
    shifted = [x + s * h * np.eye(x_test.shape[1])[d] for x in x_test for d in range(x_test.shape[1]) for s in (1, -1)]
    e = cache.energies([geometry(*x) for x in shifted], desc=desc).reshape(len(x_test), x_test.shape[1], 2)
    return -(e[..., 0] - e[..., 1]) / (2 * h)


def h2_system(cache: EnergyCache, quick: bool, seed: int) -> System:
    """H2 bond length in [0.45, 2.1] A; dynamics from 0.95 A at rest (reduced mass)."""
    rng = np.random.default_rng(seed)
    r_train = np.linspace(0.45, 2.1, 8 if quick else 12)
    r_test = np.sort(rng.uniform(0.45, 2.1, 12 if quick else 40))
    r_exact = np.round(np.arange(0.40, 2.15 + 1e-9, 0.05), 10)
    e = cache.energies([h2_geometry(r) for r in (*r_train, *r_test, *r_exact)], desc="H2 exact energies (qchem, FCI)")
    n, t = len(r_train), len(r_test)
    return System(
        name="H2",
        description=f"H2 / STO-3G, bond length r in [0.45, 2.1] A: {n} training, {t} random test geometries",
        n_qubits=4,
        pairs=CHAIN,
        x_train=r_train[:, None],
        e_train=e[:n],
        x_test=r_test[:, None],
        e_test=e[n : n + t],
        f_test=test_forces(cache, h2_geometry, r_test[:, None], "H2 test forces (qchem, FCI)"),
        axes=[np.geomspace(0.45, 2.1, 10 if quick else 18)],  # denser where the curve is steep
        exact=grid_surface([r_exact], e[n + t :]),
        r0=np.array([0.95]),
        inverse_mass=np.array([[1 / MU]]),
    )


def h3_geometry(r1: float, r2: float) -> tuple[tuple[str, ...], np.ndarray, int]:
    """Linear H-H-H+ with bond lengths r1, r2 (Angstrom); its mirror image (r2, r1) has the same energy, so
    both are written as one geometry (one cache entry)."""
    a, b = sorted((float(r1), float(r2)))
    return ("H", "H", "H"), np.array([[0.0, 0.0, 0.0], [0.0, 0.0, a], [0.0, 0.0, a + b]]), 1


def bond_invariants(x: np.ndarray) -> np.ndarray:
    """Features of linear H3+ that do not change when its two bonds swap (the same molecule, mirrored):
    the mean bond length (r1 + r2) / 2 and the squared asymmetry (r1 - r2)^2, both smooth in (r1, r2)."""
    r1, r2 = x[:, 0], x[:, 1]
    return np.stack([(r1 + r2) / 2, (r1 - r2) ** 2], 1)


def h3_system(cache: EnergyCache, quick: bool, seed: int) -> System:
    """Linear H3+ on [0.6, 1.4]^2 A: the distinct molecules of a 5 x 5 training grid (r1 <= r2: 15), random
    test points, dynamics of both bonds from (0.95, 0.72) A at rest (three hydrogen masses: Wilson G matrix
    of two bond lengths). Every kernel sees the mirror-invariant ``bond_invariants``, so a learned surface
    is symmetric and each grid molecule is measured once (21 of the 6 x 6 tabulation grid's 36 points)."""
    rng = np.random.default_rng(seed + 1)
    axis = np.round(np.arange(0.6, 1.4 + 1e-9, 0.05), 10)  # exact grid, 0.05 A
    exact_grid = np.stack([m.reshape(-1) for m in np.meshgrid(axis, axis, indexing="ij")], 1)
    train = np.stack([m.reshape(-1) for m in np.meshgrid(axis[::4], axis[::4], indexing="ij")], 1)
    train = train[train[:, 0] <= train[:, 1]]  # (r1, r2) and (r2, r1) are one molecule
    x_test = rng.uniform(0.6, 1.4, (12 if quick else 30, 2))
    e = cache.energies([h3_geometry(*x) for x in (*exact_grid, *x_test)], desc="H3+ exact energies (qchem, FCI)")
    e_grid, e_test = e[: len(exact_grid)], e[len(exact_grid) :]
    on_grid = {tuple(x): v for x, v in zip(exact_grid.round(10), e_grid, strict=True)}
    return System(
        name="H3+",
        description=f"linear H3+ / STO-3G, bond lengths (r1, r2) in [0.6, 1.4]^2 A: {len(train)} training "
        f"(the distinct molecules of a 5 x 5 grid), {len(x_test)} random test geometries; kernels of the "
        "mirror-invariant features ((r1 + r2) / 2, (r1 - r2)^2)",
        n_qubits=6,
        pairs=TREE,
        x_train=train,
        e_train=np.array([on_grid[tuple(x)] for x in train.round(10)]),
        x_test=x_test,
        e_test=e_test,
        f_test=test_forces(cache, h3_geometry, x_test, "H3+ test forces (qchem, FCI)"),
        axes=[np.linspace(0.6, 1.4, 6)] * 2,  # inner points between the training points
        exact=grid_surface([axis, axis], e_grid),
        r0=np.array([0.95, 0.72]),
        inverse_mass=np.array([[2.0, -1.0], [-1.0, 2.0]]) / M_H,
        features=bond_invariants,
    )


# ---------------------------------------------------------------------------------------- kernels


def projected_gram(bx: np.ndarray, by: np.ndarray, gamma: float) -> np.ndarray:
    """The projected kernel from Bloch vectors ``[N, 3n]``, ``[M, 3n]``: exp(-gamma |b(x) - b(y)|^2 / 2)
    (= exp(-gamma sum_q ||rho_q(x) - rho_q(y)||_F^2), QuantumKernel's definition)."""
    d2 = ((bx[:, None, :] - by[None, :, :]) ** 2).sum(-1)
    return np.exp(-gamma * 0.5 * d2)


def cv_alpha(K: np.ndarray, y: np.ndarray, cv) -> tuple[float, float, object]:
    """The ridge alpha with the best cross-validated MAE on a precomputed Gram matrix: (alpha, score, model)."""
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV

    search = GridSearchCV(
        KernelRidge(kernel="precomputed"), {"alpha": ALPHAS}, cv=cv, scoring="neg_mean_absolute_error"
    ).fit(K, y)
    return search.best_params_["alpha"], search.best_score_, search.best_estimator_


def best_by_cv(grams: dict, y: np.ndarray, cv) -> tuple:
    """The hyper-parameters (keys of ``grams``) whose Gram matrix cross-validates best (with its best alpha)."""
    scores = {key: cv_alpha(K, y, cv)[1] for key, K in grams.items()}
    return max(scores, key=scores.get)


@dataclass
class Measured:
    """One route's kernel matrices (training Gram ``[N, N]``, grid rows ``[G, N]``), the exact Gram matrix at
    the same hyper-parameters (for the Gram error), and what the measurement cost."""

    k_train: np.ndarray
    k_grid: np.ndarray
    reference: np.ndarray | None
    params: str
    circuits: int = 0
    shots: int = 0
    seconds: float = 0.0
    note: str = ""


@dataclass
class Call:
    """One kernel call's value (float64 numpy) and cost; ``folded``: ZNE's noisy values per scale factor."""

    value: np.ndarray
    circuits: int
    shots: int
    seconds: float
    folded: np.ndarray | None = None


def measure(kernel, call: Callable, bases: int = 1) -> Call:
    """``call(kernel)`` without gradients, with its circuits and shots (``bases`` measured circuits per
    parameter set: 3 for Bloch vectors on a sampling backend) and wall time."""
    start = time.perf_counter()
    with torch.no_grad():
        value = call(kernel).double().numpy()
    stats = kernel.execution_stats
    folded = None
    if kernel.mitigation is not None:  # noisy values per scale factor over all tapes of the call: [F, B, R]
        records = kernel.last_mitigation
        folded = np.concatenate([r.noisy for r in (records if isinstance(records, list) else [records])], axis=1)
    return Call(value, stats["circuits"] * bases, stats["shots"] * bases, time.perf_counter() - start, folded)


def total(*calls: Call) -> dict:
    """Summed costs of calls, as ``Measured`` keyword arguments."""
    return {"circuits": sum(c.circuits for c in calls), "shots": sum(c.shots for c in calls),
            "seconds": sum(c.seconds for c in calls)}  # fmt: skip


def pair_matrix(values: np.ndarray, n: int, m: int | None = None) -> np.ndarray:
    """Kernel values of measured pairs as a matrix: ``[n, m]`` row by row, or (``m`` None) the symmetric
    ``[n, n]`` from its upper pairs row by row and a unit diagonal: the order QuantumKernel measures in."""
    if m is not None:
        return values.reshape(n, m)
    K = np.eye(n)
    i, j = np.triu_indices(n, 1)
    K[i, j] = K[j, i] = values
    return K


def exponential(folded: np.ndarray, asymptote: float) -> np.ndarray:
    """Mitiq's exponential extrapolation of ``folded [F, ...]`` (one row per scale factor), element by element."""
    from hybridai import ZNE

    zne = ZNE(SCALE_FACTORS, extrapolation="exp", asymptote=asymptote)
    flat = folded.reshape(len(SCALE_FACTORS), -1)
    return np.array([zne.extrapolate(flat[:, j]) for j in range(flat.shape[1])]).reshape(folded.shape[1:])


def richardson(folded: np.ndarray) -> np.ndarray:
    from hybridai import ZNE

    return np.tensordot(ZNE(SCALE_FACTORS).coefficients, folded, 1)


@dataclass
class Kernels:
    """Makes a system's quantum kernel at a bandwidth on one route: exact, noisy (the device) or ZNE."""

    system: System
    kind: str
    device: str
    shots: int
    seed: int

    def __call__(self, route: str, scale: float):
        from hybridai import ZNE, QuantumKernel

        options = {} if route == "exact" else {"backend": self.device, "shots": self.shots, "seed": self.seed}
        if route == "ZNE":
            options["mitigation"] = ZNE(SCALE_FACTORS)
        fmap = ReuploadingMap(scale, self.system.n_qubits, self.system.pairs)
        return QuantumKernel(fmap, self.system.n_qubits, kind=self.kind, **options)


def fidelity_routes(make: Kernels, scales: np.ndarray, y: np.ndarray, cv) -> tuple[dict[str, Measured], Call]:
    """The fidelity kernel's four routes, and the cost of the bandwidth scan on the device. The bandwidth is
    chosen by cross-validation on exact Gram matrices (exact route) or on Gram matrices measured on the device
    (all device routes); ZNE exponential re-extrapolates the Richardson run's folded values."""
    from tqdm.auto import tqdm

    system = make.system
    X, G = torch.tensor(system.f_train), torch.tensor(system.f_grid[0])
    n, g = len(X), len(G)
    exact = {s: measure(make("exact", s), lambda k: k.matrix(X)) for s in scales}
    (s0,) = best_by_cv({(s,): c.value for s, c in exact.items()}, y, cv)
    rows = measure(make("exact", s0), lambda k: k.matrix(G, X))
    routes = {"exact": Measured(exact[s0].value, rows.value, None, f"scale={s0:.3g}/A", **total(exact[s0], rows))}
    bar = tqdm(scales, desc=f"{system.name} fidelity: bandwidth scan on the device", leave=False)
    scan = {s: measure(make("noisy", s), lambda k: k.matrix(X)) for s in bar}
    (s1,) = best_by_cv({(s,): c.value for s, c in scan.items()}, y, cv)
    params, reference = f"scale={s1:.3g}/A (device CV)", exact[s1].value
    rows = measure(make("noisy", s1), lambda k: k.matrix(G, X))
    routes["noisy"] = Measured(scan[s1].value, rows.value, reference, params, **total(scan[s1], rows))
    zne = make("ZNE", s1)
    train, rows = measure(zne, lambda k: k.matrix(X)), measure(zne, lambda k: k.matrix(G, X))
    routes["ZNE Richardson"] = Measured(train.value, rows.value, reference, params, **total(train, rows))
    start = time.perf_counter()
    for mine, theirs in ((pair_matrix(richardson(train.folded[..., 0]), n), train.value),
                         (pair_matrix(richardson(rows.folded[..., 0]), g, n), rows.value)):  # fmt: skip
        # QuantumKernel clips its values into [0, 1] (a probability; extrapolation can leave the interval)
        assert np.allclose(mine.clip(0, 1), theirs, atol=1e-10), "folded values out of QuantumKernel's pair order"
    asymptote = 2.0**-system.n_qubits  # probability of |0...0> in the maximally mixed state
    cost = {**total(train, rows), "note": "the Richardson run's circuits"}
    k_train = pair_matrix(exponential(train.folded[..., 0], asymptote).clip(0, 1), n)  # clipped as QuantumKernel
    k_grid = pair_matrix(exponential(rows.folded[..., 0], asymptote).clip(0, 1), g, n)  # clips Richardson's
    cost["seconds"] += time.perf_counter() - start
    routes["ZNE exponential"] = Measured(k_train, k_grid, reference, params, **cost)
    return routes, Call(np.zeros(0), **total(*scan.values()))


def projected_routes(make: Kernels, scales: np.ndarray, y: np.ndarray, cv) -> tuple[dict[str, Measured], Call]:
    """The projected kernel's four routes and its bandwidth scan on the device: Bloch vectors measured (N
    points, 3 bases each on a sampling backend), the kernel computed classically; (scale, gamma) chosen by
    cross-validation as for the fidelity kernel (gamma costs no circuits)."""
    from tqdm.auto import tqdm

    system = make.system
    X, G = torch.tensor(system.f_train), torch.tensor(system.f_grid[0])
    XG, n = torch.cat([X, G]), len(X)

    def best(bloch: dict) -> tuple:
        grams = {(s, g): projected_gram(b[:n], b[:n], g) for s, b in bloch.items() for g in PROJECTED_GAMMAS}
        return best_by_cv(grams, y, cv)

    def flat(call: Call) -> np.ndarray:
        return call.value.reshape(len(call.value), -1)  # [points, 3 n_qubits]

    exact = {s: measure(make("exact", s), lambda k: k.bloch_vectors(XG)) for s in scales}
    s0, g0 = best({s: flat(c) for s, c in exact.items()})
    b = flat(exact[s0])
    routes = {"exact": Measured(projected_gram(b[:n], b[:n], g0), projected_gram(b[n:], b[:n], g0), None,
                                f"scale={s0:.3g}/A, gamma={g0:g}", **total(exact[s0]))}  # fmt: skip
    bar = tqdm(scales, desc=f"{system.name} projected: bandwidth scan on the device", leave=False)
    scan = {s: measure(make("noisy", s), lambda k: k.bloch_vectors(X), bases=3) for s in bar}
    s1, g1 = best({s: flat(c) for s, c in scan.items()})
    params, e = f"scale={s1:.3g}/A, gamma={g1:g} (device CV)", flat(exact[s1])
    reference = projected_gram(e[:n], e[:n], g1)
    rows = measure(make("noisy", s1), lambda k: k.bloch_vectors(G), bases=3)
    b, bg = flat(scan[s1]), flat(rows)
    routes["noisy"] = Measured(projected_gram(b, b, g1), projected_gram(bg, b, g1), reference, params,
                               **total(scan[s1], rows))  # fmt: skip
    zne = measure(make("ZNE", s1), lambda k: k.bloch_vectors(XG), bases=3)
    assert np.allclose(richardson(zne.folded).reshape(zne.value.shape), zne.value, atol=1e-10)
    start = time.perf_counter()
    for route, bloch in (("ZNE Richardson", flat(zne)), ("ZNE exponential", exponential(zne.folded, 0.0))):
        bloch = bloch.reshape(len(XG), -1)
        cost = total(zne) if route == "ZNE Richardson" else {**total(zne), "note": "the Richardson run's circuits"}
        routes[route] = Measured(projected_gram(bloch[:n], bloch[:n], g1), projected_gram(bloch[n:], bloch[:n], g1),
                                 reference, params, **cost)  # fmt: skip
    routes["ZNE exponential"].seconds += time.perf_counter() - start
    library = make("exact", s0)
    library.gamma = g0
    with torch.no_grad():  # projected_gram is QuantumKernel's formula: checked on the exact route
        assert np.allclose(library.matrix(X).numpy(), routes["exact"].k_train, atol=1e-10)
    return routes, Call(np.zeros(0), **total(*scan.values()))


# ---------------------------------------------------------------------------------------- learned surfaces


@dataclass
class Outcome:
    """A route's learned surface, its dynamics and its row of the table."""

    row: dict
    surface: Callable
    alpha: float = float("nan")
    run: dict = field(default_factory=dict)
    tabulation_mha: float = float("nan")  # RBF only: largest |spline - direct model| at the test geometries


def repair_report(K: np.ndarray) -> tuple[np.ndarray, str]:
    """``hybridai.psd_repair(K)`` and what it changed: Frobenius norm of the change and the number of
    (numerically) negative eigenvalues it clipped, with the most negative one."""
    from hybridai import psd_repair

    repaired = psd_repair(torch.from_numpy(K)).numpy()
    eig = np.linalg.eigvalsh(0.5 * (K + K.T))
    negative = eig < -1e-10
    clipped = f"{int(negative.sum())}, min {eig.min():.2g}" if negative.any() else "0"
    return repaired, f"{np.linalg.norm(repaired - K):.2g} ({clipped})"


def learn(system: System, measured: Measured, cv, row: dict) -> Outcome:
    """Kernel ridge on the repaired training Gram matrix (alpha by cross-validation), tabulated on the grid,
    splined, and scored on the test geometries."""
    offset = float(system.e_train.mean())  # kernel ridge has no intercept: models fit E - mean(E_train)
    repaired, repair = repair_report(measured.k_train)
    alpha, _, model = cv_alpha(repaired, system.e_train - offset, cv)
    surface = grid_surface(system.axes, model.predict(measured.k_grid)[system.f_grid[1]] + offset)
    e, f = energies_and_forces(surface, system.x_test)
    row = {**row, "hyper-parameters (CV)": f"{measured.params}, alpha={alpha:.0e}"}
    if measured.reference is not None:
        row["Gram err F"] = float(np.linalg.norm(measured.k_train - measured.reference))
        row["Gram err max"] = float(np.abs(measured.k_train - measured.reference).max())
    row.update({
        "PSD repair |dK|_F (neg. eigs)": repair,
        "E MAE mHa": 1000 * float(np.abs(e - system.e_test).mean()),
        "F MAE mHa/A": 1000 * float(np.abs(f.reshape(system.f_test.shape) - system.f_test).mean()),
        "circuits": f"{measured.circuits} ({measured.note})" if measured.note else measured.circuits,
        "shots": measured.shots,
        "wall s": measured.seconds,
    })  # fmt: skip
    return Outcome(row, surface, alpha)


def learn_all(system: System, make: dict[str, Kernels], scales: np.ndarray, cv, bar) -> tuple[list[Outcome], dict]:
    """Every kernel and route of one system (RBF first), and the cost of each bandwidth scan on the device."""
    from sklearn.metrics.pairwise import rbf_kernel

    y = system.e_train - float(system.e_train.mean())
    base = {"system": system.name}
    x, grid = system.f_train, system.f_grid[0]
    (g,) = best_by_cv({(g,): rbf_kernel(x, gamma=g) for g in RBF_GAMMAS}, y, cv)
    rbf = Measured(rbf_kernel(x, gamma=g), rbf_kernel(grid, x, gamma=g), None, f"gamma={g:.3g} A^-2")
    outcomes = [learn(system, rbf, cv, {**base, "kernel": "classical RBF", "route": "exact"})]
    outcomes[0].tabulation_mha = tabulation_error(system, g, outcomes[0])
    bar.update()
    scans = {}
    for kernel, routes_of in (("quantum fidelity", fidelity_routes), ("quantum projected", projected_routes)):
        routes, scans[kernel] = routes_of(make[kernel], scales, y, cv)
        for route in ROUTES:
            outcomes.append(learn(system, routes[route], cv, {**base, "kernel": kernel, "route": route}))
        bar.update()
    return outcomes, scans


def dynamics(system: System, outcomes: list[Outcome], dt: float, steps: int) -> Outcome:
    """Velocity Verlet on the exact surface and on every learned one: deviation and energy drift."""
    from tqdm.auto import tqdm

    exact = Outcome({"system": system.name, "kernel": "exact (FCI)", "route": "",
                     "hyper-parameters (CV)": "FCI energies, spline every 0.05 A"}, system.exact)  # fmt: skip
    low = np.array([a[0] for a in system.axes]) - 0.1  # a trajectory this far outside the grid has left
    high = np.array([a[-1] for a in system.axes]) + 0.1  # the learned surface (its spline extrapolates)
    for outcome in tqdm([exact, *outcomes], desc=f"{system.name} velocity Verlet", unit="surface"):
        with np.errstate(all="ignore"):  # a bad surface can fling the atoms apart: reported, not warned about
            outcome.run = velocity_verlet(outcome.surface, system.r0, dt, steps, system.inverse_mass)
        r = outcome.run["r"].reshape(steps + 1, -1)
        outside = ~((r >= low) & (r <= high)).all(1)
        inside = int(np.argmax(outside)) if outside.any() else steps + 1
        if outcome is not exact:
            deviation = np.linalg.norm(r[:inside] - exact.run["r"].reshape(steps + 1, -1)[:inside], axis=1)
            left = f"left the grid at {outcome.run['t'][inside]:.3g} fs" if outside.any() else None
            outcome.row["max |r - r_exact| A"] = left or float(deviation.max())
        drift = np.abs(outcome.run["total"][:inside] - outcome.run["total"][0])
        outcome.row["E drift mHa"] = 1000 * float(drift.max())
    return exact


def tabulation_error(system: System, gamma: float, rbf: Outcome) -> float:
    """Largest |spline - direct model| (mHa) of the RBF surface at the test geometries: what tabulating a
    learned surface on the grid costs in accuracy, apart from the model."""
    from sklearn.kernel_ridge import KernelRidge

    offset = float(system.e_train.mean())
    model = KernelRidge(kernel="rbf", gamma=gamma, alpha=rbf.alpha).fit(system.f_train, system.e_train - offset)
    direct = model.predict(system.features(system.x_test)) + offset
    spline, _ = energies_and_forces(rbf.surface, system.x_test)
    return 1000 * float(np.abs(direct - spline).max())


# ---------------------------------------------------------------------------------------- report


def cell(column: str, value) -> str:
    if isinstance(value, str):
        return value
    if column == "max |r - r_exact| A":
        return f"{value:.2e}"
    if isinstance(value, int | np.integer):
        return str(value)
    return f"{value:.3g}"


def print_table(rows: list[dict]) -> None:
    print("| " + " | ".join(COLUMNS) + " |")
    print("|---" * len(COLUMNS) + "|")
    for row in rows:
        print("| " + " | ".join(cell(c, row[c]) if c in row else "" for c in COLUMNS) + " |")


def relative(better: float, reference: float) -> str:
    """'+x%' when ``better`` is lower (more accurate) than ``reference``, '-x%' when higher."""
    return f"{100 * (1 - better / reference):+.0f}%"


def verdict(rows: list[dict]) -> list[str]:
    """Plain sentences from the table: quantum vs RBF, the +12% claim, ZNE vs exact and unmitigated."""
    lines = []
    for system in dict.fromkeys(r["system"] for r in rows):
        mine = [r for r in rows if r["system"] == system]
        rbf = next(r for r in mine if r["kernel"] == "classical RBF")
        quantum = [r for r in mine if r["kernel"] in KERNELS]
        wins = [
            f"{r['kernel']} ({r['route']}) {metric.split()[0]} MAE {relative(r[metric], rbf[metric])}"
            for r in quantum
            for metric in ("E MAE mHa", "F MAE mHa/A")
            if r[metric] < rbf[metric]
        ]
        if wins:
            lines.append(
                f"{system}: quantum kernels beat RBF on: {'; '.join(wins)} (relative to RBF, + = lower error)."
            )
        else:
            best = min(quantum, key=lambda r: r["E MAE mHa"])
            lines.append(
                f"{system}: no quantum kernel beat RBF anywhere (energy or force MAE, any route); the closest, "
                f"{best['kernel']} ({best['route']}), has an energy MAE {best['E MAE mHa']:.3g} mHa against RBF's "
                f"{rbf['E MAE mHa']:.3g} ({relative(best['E MAE mHa'], rbf['E MAE mHa'])})."
            )
        change = ", ".join(
            f"{r['kernel'].split()[1]} {r['route']} {relative(r['E MAE mHa'], rbf['E MAE mHa'])}" for r in quantum
        )
        lines.append(f"{system}: energy-accuracy change vs RBF (the '+12%' claim measured): {change}.")
        for kernel in KERNELS:
            by = {r["route"]: r for r in mine if r["kernel"] == kernel}
            noisy, rich, expo = by["noisy"], by["ZNE Richardson"], by["ZNE exponential"]
            dev = {route: cell("max |r - r_exact| A", r["max |r - r_exact| A"]) for route, r in by.items()}
            lines.append(
                f"{system} {kernel}: Gram error (Frobenius) noisy {noisy['Gram err F']:.3g} -> ZNE Richardson "
                f"{rich['Gram err F']:.3g} ({relative(rich['Gram err F'], noisy['Gram err F'])}), exponential "
                f"{expo['Gram err F']:.3g} ({relative(expo['Gram err F'], noisy['Gram err F'])}); energy MAE exact "
                f"{by['exact']['E MAE mHa']:.3g}, noisy {noisy['E MAE mHa']:.3g}, Richardson {rich['E MAE mHa']:.3g}, "
                f"exponential {expo['E MAE mHa']:.3g} mHa; trajectory deviation (A) noisy {dev['noisy']}, "
                f"Richardson {dev['ZNE Richardson']}, exponential {dev['ZNE exponential']} "
                f"(exact kernel {dev['exact']})."
            )
    return lines


def costs(system: System, scans: dict[str, Call], n_scales: int) -> str:
    """What each kernel measures on hardware for this system, and what its bandwidth scan cost."""
    n, g = len(system.x_train), len(system.f_grid[0])
    pairs, points = n * (n - 1) // 2 + g * n, n + g
    k = len(SCALE_FACTORS)
    fidelity, projected = scans["quantum fidelity"], scans["quantum projected"]
    return (
        f"{system.name} on hardware, N = {n} training and G = {g} distinct grid points: fidelity kernel "
        f"N(N-1)/2 + G N = {pairs} circuits ({k * pairs} with ZNE); projected kernel 3 bases x (N + G) = "
        f"{3 * points} circuits ({3 * k * points} with ZNE). Bandwidth scans on the device ({n_scales} "
        f"bandwidths, training Gram matrices): fidelity {fidelity.circuits} circuits, {fidelity.shots} shots, "
        f"{fidelity.seconds:.1f} s; "
        f"projected {projected.circuits} circuits, {projected.shots} shots, {projected.seconds:.1f} s"
    )


STYLES = {"exact": "C1-", "noisy": "C3:", "ZNE Richardson": "C2--", "ZNE exponential": "C4-."}


def figure(systems: list[System], results: dict, exact_runs: dict, rows: list[dict], device: str, png: Path) -> None:
    """Surfaces, errors by route and trajectories in one PNG; ``device``: the noisy backend (named in the titles)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(18, 10))
    ax = fig.subplots(2, 3)
    h2 = systems[0]
    fidelity = [o for o in results[h2.name] if o.row["kernel"] == "quantum fidelity"]
    rbf = results[h2.name][0]
    r = np.linspace(h2.axes[0][0], h2.axes[0][-1], 300)[:, None]
    ax[0, 0].plot(r[:, 0], energies_and_forces(h2.exact, r)[0], "k-", lw=2, label="exact (FCI)")
    ax[0, 0].plot(r[:, 0], energies_and_forces(rbf.surface, r)[0], "C0-", label="classical RBF")
    for o in fidelity:
        ax[0, 0].plot(
            r[:, 0], energies_and_forces(o.surface, r)[0], STYLES[o.row["route"]], label=f"fidelity, {o.row['route']}"
        )
    ax[0, 0].plot(h2.x_train[:, 0], h2.e_train, "ks", mfc="none", label="training points")
    ax[0, 0].set(xlabel="bond length r (A)", ylabel="energy (Ha)", title=f"H2 surfaces learned on {device}")

    runs = [(o.row["kernel"], o.row["route"], o.run) for o in fidelity]
    ax[1, 1].plot(exact_runs[h2.name].run["t"], exact_runs[h2.name].run["r"][:, 0], "k-", lw=2, label="exact (FCI)")
    for _, route, run in runs:
        ax[1, 1].plot(run["t"], run["r"][:, 0], STYLES[route], label=f"fidelity, {route}")
    ax[1, 1].set(xlabel="time (fs)", ylabel="bond length (A)", title="H2 velocity Verlet")

    names = [s.name for s in systems]
    labels = [f"{s}\n{k.split()[1]}" for s in names for k in KERNELS]
    for i, route in enumerate(("noisy", "ZNE Richardson", "ZNE exponential")):
        values = [next(x["Gram err F"] for x in rows if x["system"] == s and x["kernel"] == k and x["route"] == route)
                  for s in names for k in KERNELS]  # fmt: skip
        ax[0, 2].bar(np.arange(len(labels)) + 0.27 * (i - 1), values, 0.27, color=STYLES[route][:2], label=route)
    ax[0, 2].set_xticks(range(len(labels)), labels)
    ax[0, 2].set(ylabel="|K - K_exact|_F (training Gram)", title=f"Gram-matrix error by route on {device}")

    bars = [(s, k, route) for s in names for k in KERNELS for route in ROUTES]
    values = [next(x["E MAE mHa"] for x in rows if (x["system"], x["kernel"], x["route"]) == b) for b in bars]
    ax[1, 0].bar(range(len(bars)), values, color=[STYLES[b[2]][:2] for b in bars])
    for s in names:
        rbf_mae = next(x["E MAE mHa"] for x in rows if x["system"] == s and x["kernel"] == "classical RBF")
        where = [i for i, b in enumerate(bars) if b[0] == s]
        ax[1, 0].hlines(rbf_mae, where[0] - 0.4, where[-1] + 0.4, colors="C0", label=f"RBF, {s}")
    ax[1, 0].set_xticks(
        range(len(bars)), [f"{b[0]} {b[1].split()[1][:4]}\n{b[2]}" for b in bars], rotation=90, fontsize=7
    )
    ax[1, 0].set(yscale="log", ylabel="test energy MAE (mHa)", title="energy errors by route (bars) vs RBF (lines)")

    if len(systems) > 1:
        h3 = systems[1]
        axis = np.linspace(h3.axes[0][0], h3.axes[0][-1], 60)
        a, b = np.meshgrid(axis, axis, indexing="ij")
        e = energies_and_forces(h3.exact, np.stack([a.ravel(), b.ravel()], 1))[0].reshape(a.shape)
        contour = ax[0, 1].contourf(a, b, 1000 * (e - e.min()), levels=np.linspace(0, 120, 25), cmap="viridis")
        fig.colorbar(contour, ax=ax[0, 1], label="E - E_min (mHa)")
        ax[0, 1].plot(*h3.x_train.T, "ws", mfc="none", label="training points")
        ax[0, 1].plot(*exact_runs[h3.name].run["r"].T, "k-", lw=1.5, label="exact trajectory")
        ax[0, 1].set(xlabel="r1 (A)", ylabel="r2 (A)", title="linear H3+: FCI surface")
        ax[1, 2].plot(*exact_runs[h3.name].run["r"].T, "k-", lw=2, label="exact (FCI)")
        for o in results[h3.name]:
            if o.row["kernel"] == "quantum fidelity":
                ax[1, 2].plot(*o.run["r"].T, STYLES[o.row["route"]], label=f"fidelity, {o.row['route']}")
        ax[1, 2].set(xlabel="r1 (A)", ylabel="r2 (A)", title="H3+ velocity Verlet (two bonds)")
    else:
        for a in (ax[0, 1], ax[1, 2]):
            a.text(0.5, 0.5, "H3+ not run (--quick)", ha="center", va="center", transform=a.transAxes)
    for a in ax.flat:
        if a.get_legend_handles_labels()[0]:
            a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


# ---------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> dict:
    """Run the comparison; prints the table and the verdict, saves the PNG and returns the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="H2 only, fewer points and steps (under a minute)")
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for the PNG and the energy cache")
    routes = (
        f"density (hybridai's density matrices, {NOISY_DEVICES['density']}, default) or aer ({NOISY_DEVICES['aer']})"
    )
    parser.add_argument("--route", choices=tuple(NOISY_DEVICES), default=None,
                        help=f"what simulates the noisy device: {routes}")  # fmt: skip
    parser.add_argument("--device", default=None,
                        help="any noisy backend, in place of --route's (e.g. ibm:fake_jakarta)")  # fmt: skip
    parser.add_argument("--shots", type=int, default=2000, help="shots per circuit (default 2000)")
    parser.add_argument("--steps", type=int, default=None, help="velocity-Verlet steps (default 600, quick 300)")
    parser.add_argument("--dt", type=float, default=0.1, help="time step, fs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: these circuits are small, and more threads on a busy machine "
                        "wait for each other)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error(f"--threads {args.threads}: accepted: a positive int")
    if args.route is not None and args.device is not None:
        parser.error(f"--route {args.route} and --device {args.device}: give one (the device names its simulator)")
    if args.device is None:
        args.device = NOISY_DEVICES[args.route or "density"]
    args.out.mkdir(parents=True, exist_ok=True)  # before the run, not after it
    torch.set_num_threads(args.threads)  # a script owns its process, as `hybridai demo --threads` does
    with warnings.catch_warnings():  # this process's filters are restored afterwards
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*ill-conditioned.*")  # tiny ridge alphas in the CV grid
        warnings.filterwarnings("ignore", module="mitiq.*")
        return run(args)


def run(args: argparse.Namespace) -> dict:
    from sklearn.model_selection import KFold
    from tqdm.auto import tqdm

    start = time.perf_counter()
    cache = EnergyCache(args.out / "qchem_energies.json")
    builders = [h2_system] if args.quick else [h2_system, h3_system]
    systems = [build(cache, args.quick, args.seed) for build in builders]
    t_data = time.perf_counter() - start
    cv = KFold(4, shuffle=True, random_state=args.seed)
    steps = args.steps or (300 if args.quick else 600)
    scales = np.logspace(-1, 1, 5)  # feature-map bandwidths, 1/A (a device scan per bandwidth)
    results, scans, exact_runs = {}, {}, {}
    with tqdm(total=3 * len(systems), desc="kernels (RBF, fidelity, projected)", unit="kernel") as bar:
        for system in systems:
            bar.set_postfix_str(system.name)
            make = {f"quantum {kind}": Kernels(system, kind, args.device, args.shots, args.seed)
                    for kind in ("fidelity", "projected")}  # fmt: skip
            results[system.name], scans[system.name] = learn_all(system, make, scales, cv, bar)
    for system in systems:
        exact_runs[system.name] = dynamics(system, results[system.name], args.dt, steps)
    rows = [o.row for s in systems for o in (exact_runs[s.name], *results[s.name])]

    print()
    for system in systems:
        print(f"{system.description}; {system.n_qubits}-qubit feature maps; MD: {steps} velocity-Verlet steps of "
              f"{args.dt} fs from {tuple(float(v) for v in system.r0)} A at rest")  # fmt: skip
    family = args.device.partition(":")[0]
    how = f" ({SIMULATORS[family]})" if family in SIMULATORS else ""
    print(f"device routes (noisy, ZNE): {args.device}{how}, {args.shots} shots per circuit, seed {args.seed}; ZNE: "
          f"global folding at scale factors {SCALE_FACTORS}; torch {torch.get_num_threads()} thread(s)\n")  # fmt: skip
    print_table(rows)
    print()
    for system in systems:
        print(costs(system, scans[system.name], len(scales)))
        print(f"{system.name}: tabulating a learned surface (spline on the grid) moves the RBF energies at the test "
              f"geometries by at most {results[system.name][0].tabulation_mha:.2g} mHa")  # fmt: skip
    print()
    lines = verdict(rows)
    print("\n".join(lines))
    png = args.out / "molecular_noise.png"
    figure(systems, results, exact_runs, rows, args.device, png)
    total = time.perf_counter() - start
    print(f"\nexact data {t_data:.1f} s (cached in {cache.path}), total {total:.1f} s; figure: {png}")
    return {"rows": rows, "columns": COLUMNS, "verdict": lines, "png": png, "seconds": total, "device": args.device}


if __name__ == "__main__":
    main()
