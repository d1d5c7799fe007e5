"""Molecular dynamics of H2 on learned potential-energy surfaces: quantum kernels vs an RBF kernel.

All data is generated here, offline: PennyLane's qchem builds the H2 Hamiltonian (STO-3G, its
built-in differentiable Hartree-Fock, no pyscf) at each bond length, and the exact (full-CI)
ground-state energy is the lowest eigenvalue in the two-electron sector. Then:

1. kernel ridge regression of E(r) from a few training bond lengths, with three kernels: a
   classical RBF kernel, hybridai's quantum fidelity kernel and its projected quantum kernel;
   each kernel's bandwidth and the ridge alpha are chosen by the SAME cross-validation (same
   folds, same scoring, same alpha grid, a 9-value bandwidth grid each);
2. test MAE of energies and of forces F = -dE/dr (forces by autograd through each model);
3. velocity-Verlet dynamics of the H2 bond on each learned surface and on the exact one
   (a cubic spline through exact energies every 0.01 A): trajectory deviation from the exact
   run, vibrational period and total-energy drift.

One table is printed and ``molecular_dynamics.png`` is saved in ``--out`` (created first). Exact
energies are cached in ``qchem_energies.json`` there, so a second run does not recompute them. The
numbers are whatever they turn out to be: this example measures, it does not claim a quantum advantage.
``examples/molecular_noise.py`` reuses these pieces on a noisy device, with and without ZNE.

Run: ``.venv/bin/python examples/molecular_dynamics.py --out out`` (about a minute on 2 CPU cores).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

BOHR = 0.529177210903  # Angstrom per bohr
FS = 0.02418884326585747  # fs per atomic unit of time
MU = 1.00782503207 * 1822.888486 / 2  # reduced mass of H2 in electron masses
N_QUBITS = 4


def fci_energy(symbols: Sequence[str], coordinates: np.ndarray, charge: int = 0, basis: str = "sto-3g") -> float:
    """Full-CI ground-state energy (Hartree) of a molecule; ``coordinates`` ``[atoms, 3]`` in Angstrom.

    PennyLane's qchem builds the qubit Hamiltonian with its own differentiable Hartree-Fock (no pyscf);
    the lowest eigenvalue in the sector of the right electron number is the FCI energy.
    """
    import pennylane as qml

    bohr = np.asarray(coordinates, dtype=float).reshape(-1) / BOHR
    molecule = qml.qchem.Molecule(list(symbols), bohr, charge=charge, basis_name=basis, unit="bohr")
    hamiltonian, n = qml.qchem.molecular_hamiltonian(molecule, method="dhf")
    matrix = hamiltonian.sparse_matrix(wire_order=range(n)).toarray()
    sector = [i for i in range(2**n) if i.bit_count() == molecule.n_electrons]  # H conserves the electron number
    return float(np.linalg.eigvalsh(matrix[np.ix_(sector, sector)])[0])


def h2_geometry(r: float) -> tuple[tuple[str, ...], np.ndarray, int]:
    """(symbols, coordinates in Angstrom, charge) of H2 with bond length ``r`` (Angstrom)."""
    return ("H", "H"), np.array([[0.0, 0.0, 0.0], [0.0, 0.0, r]]), 0


def exact_energy(r: float) -> float:
    """Full-CI ground-state energy of H2 (STO-3G) at bond length ``r`` (Angstrom), in Hartree."""
    return fci_energy(*h2_geometry(r))


class EnergyCache:
    """Exact energies kept in a small JSON file, keyed by method, basis, charge, atoms and coordinates.

    ``energies(geometries)`` computes only what the file lacks (with a progress bar) and rewrites the
    file atomically (temporary file, then rename), also when interrupted part way.
    """

    def __init__(self, path: Path | str, basis: str = "sto-3g") -> None:
        self.path, self.basis = Path(path), basis
        try:
            self.values: dict[str, float] = json.loads(self.path.read_text()) if self.path.exists() else {}
        except (OSError, ValueError):
            print(f"{self.path}: unreadable, starting a new energy cache")
            self.values = {}

    def key(self, symbols: Sequence[str], coordinates: np.ndarray, charge: int) -> str:
        xyz = ",".join(f"{c:.8f}" for c in np.asarray(coordinates, dtype=float).reshape(-1))
        return f"fci/{self.basis}/charge={charge}/{'-'.join(symbols)}/{xyz}"

    def energies(self, geometries: Sequence[tuple], desc: str = "exact energies (qchem, FCI)") -> np.ndarray:
        """FCI energies (Hartree) of ``(symbols, coordinates in Angstrom, charge)`` geometries."""
        from tqdm.auto import tqdm

        keys = [self.key(*g) for g in geometries]
        missing = {k: g for k, g in zip(keys, geometries, strict=True) if k not in self.values}
        try:
            for k, g in tqdm(missing.items(), desc=desc, unit="geometry", disable=not missing):
                self.values[k] = fci_energy(*g, basis=self.basis)
        finally:
            if missing:
                self.save()
        return np.array([self.values[k] for k in keys])

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(json.dumps(self.values, indent=0))
        os.replace(temporary, self.path)


class ReuploadingMap:
    """Quantum feature map: 2 layers of RY(s x) RZ(s x) on every qubit, then CNOTs on ``pairs``.

    ``scale`` s (1/Angstrom) is the bandwidth hyper-parameter chosen by cross-validation. Qubit q
    encodes feature ``q mod F`` (F = 1 here: the bond length on all 4 qubits). ``pairs`` default to a
    ring; a device's own couplings avoid SWAPs on hardware.
    """

    def __init__(self, scale: float, n_qubits: int = N_QUBITS, pairs: Sequence[tuple[int, int]] | None = None) -> None:
        self.scale = float(scale)
        self.n_qubits = n_qubits
        ring = tuple((q, (q + 1) % n_qubits) for q in range(n_qubits))
        self.pairs = ring if pairs is None else tuple(tuple(p) for p in pairs)

    def __call__(self, x: torch.Tensor) -> None:
        import pennylane as qml

        for _ in range(2):
            for q in range(self.n_qubits):
                angle = self.scale * x[..., q % x.shape[-1]]
                qml.RY(angle, wires=q)
                qml.RZ(angle, wires=q)
            for a, b in self.pairs:
                qml.CNOT([a, b])

    def __repr__(self) -> str:
        return f"ReuploadingMap(scale={self.scale:.3g})"


def rbf_energy(model, offset: float):
    """The fitted sklearn RBF kernel ridge as a differentiable torch function r [N] -> E [N] (Hartree)."""
    centres = torch.as_tensor(model.X_fit_[:, 0], dtype=torch.float64)
    coef = torch.as_tensor(model.dual_coef_, dtype=torch.float64)
    gamma = model.gamma

    def energy(r: torch.Tensor) -> torch.Tensor:
        return torch.exp(-gamma * (r[:, None] - centres[None, :]) ** 2) @ coef + offset

    return energy


def quantum_energy(model, offset: float):
    """A fitted QuantumKernelRidge as a differentiable torch function r [N] -> E [N] (Hartree)."""

    def energy(r: torch.Tensor) -> torch.Tensor:
        return model.predict_tensor(r[:, None]) + offset

    return energy


def spline_energy(r_grid: np.ndarray, e_grid: np.ndarray):
    """The exact surface for dynamics: a cubic spline through exact energies (Hartree)."""
    from scipy.interpolate import CubicSpline

    spline = CubicSpline(r_grid, e_grid)

    class Spline(torch.autograd.Function):
        @staticmethod
        def forward(ctx, r):
            ctx.save_for_backward(r)
            return torch.as_tensor(spline(r.detach().numpy()), dtype=torch.float64)

        @staticmethod
        def backward(ctx, grad):
            (r,) = ctx.saved_tensors
            return grad * torch.as_tensor(spline(r.detach().numpy(), 1), dtype=torch.float64)

    return Spline.apply


def energies_and_forces(energy, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """E (Hartree) and F = -dE/dr (Hartree/Angstrom) at geometries ``r`` ([N] bond lengths or [N, D]
    internal coordinates, Angstrom), by autograd."""
    rt = torch.tensor(r, dtype=torch.float64, requires_grad=True)
    e = energy(rt)
    (grad,) = torch.autograd.grad(e.sum(), rt)
    return e.detach().numpy(), -grad.numpy()


def velocity_verlet(
    energy: Callable, r0: float | np.ndarray, dt_fs: float, steps: int, inverse_mass: float | np.ndarray = 1 / MU
) -> dict[str, np.ndarray]:
    """Classical dynamics on ``energy``, starting at rest at ``r0`` (Angstrom).

    ``r0`` is one bond length (then ``inverse_mass`` is 1/mu, per electron mass: H2's reduced mass by
    default) or a vector of D internal coordinates (then ``inverse_mass`` is the D x D Wilson G matrix,
    constant for bond lengths of a linear molecule). Returns times (fs), coordinates (Angstrom, ``[T]``
    or ``[T, D]``) and the total energy (Hartree) at each step.
    """
    dt = dt_fs / FS  # atomic units of time
    g = np.asarray(inverse_mass, dtype=float)
    mass = 1 / g if g.ndim == 0 else np.linalg.inv(g)

    def force(r_bohr: np.ndarray) -> tuple[float, np.ndarray]:
        e, f = energies_and_forces(energy, (r_bohr * BOHR)[None])
        return float(e[0]), f[0] * BOHR  # Hartree, Hartree/bohr

    r = np.asarray(r0, dtype=float) / BOHR
    v = np.zeros_like(r)
    e, f = force(r)
    rs, totals = [r], [e]
    for _ in range(steps):
        v = v + 0.5 * dt * (g @ f if g.ndim else g * f)
        r = r + dt * v
        e, f = force(r)
        v = v + 0.5 * dt * (g @ f if g.ndim else g * f)
        rs.append(r)
        totals.append(e + 0.5 * float(v @ mass @ v if g.ndim else mass * v * v))
    return {"t": np.arange(steps + 1) * dt_fs, "r": np.array(rs) * BOHR, "total": np.array(totals)}


def period_fs(t: np.ndarray, r: np.ndarray) -> float:
    """Mean vibrational period (fs) from upward crossings of the mean bond length."""
    centred = r - r.mean()
    up = np.nonzero((centred[:-1] < 0) & (centred[1:] >= 0))[0]
    times = t[up] - centred[up] * (t[up + 1] - t[up]) / (centred[up + 1] - centred[up])
    return float(np.diff(times).mean()) if len(times) > 1 else float("nan")


def main(argv: list[str] | None = None) -> dict[str, dict]:
    """Run the comparison; prints the table, saves the figure and returns the table's rows."""
    parser = argparse.ArgumentParser(description="H2 dynamics on quantum-kernel and RBF-kernel surfaces")
    parser.add_argument("--train", type=int, default=12, help="training bond lengths (evenly spaced)")
    parser.add_argument("--test", type=int, default=40, help="random test bond lengths")
    parser.add_argument("--r-min", type=float, default=0.45, help="Angstrom")
    parser.add_argument("--r-max", type=float, default=2.1, help="Angstrom")
    parser.add_argument("--r0", type=float, default=0.95, help="initial bond length of the dynamics, Angstrom")
    parser.add_argument("--dt", type=float, default=0.1, help="time step, fs")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--backend", default="pennylane:default.qubit", help="quantum backend of the kernels")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for the PNG and the energy cache")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)  # before the run, not after it
    png = args.out / "molecular_dynamics.png"
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    start = time.perf_counter()

    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV, KFold
    from tqdm.auto import tqdm

    from hybridai import QuantumKernel, QuantumKernelRidge

    # ---------------------------------------------------------------- data (exact, offline)
    rng = np.random.default_rng(args.seed)
    r_train = np.linspace(args.r_min, args.r_max, args.train)
    r_test = np.sort(rng.uniform(args.r_min, args.r_max, args.test))
    r_grid = np.arange(args.r_min - 0.05, args.r_max + 0.05 + 1e-9, 0.01)
    h = 1e-4
    points = [*r_train, *r_test, *(r_test - h), *(r_test + h), *r_grid]
    values = EnergyCache(args.out / "qchem_energies.json").energies([h2_geometry(r) for r in points])
    n_tr, n_te = len(r_train), len(r_test)
    e_train, e_test = values[:n_tr], values[n_tr : n_tr + n_te]
    f_test = -(values[n_tr + 2 * n_te : n_tr + 3 * n_te] - values[n_tr + n_te : n_tr + 2 * n_te]) / (2 * h)
    e_grid = values[n_tr + 3 * n_te :]
    t_data = time.perf_counter() - start

    # ---------------------------------------------------------------- models, same cross-validation
    offset = float(e_train.mean())  # kernel ridge has no intercept: all models fit E - mean(E_train)
    cv = KFold(4, shuffle=True, random_state=args.seed)
    alphas = [1e-12, 1e-10, 1e-8, 1e-6, 1e-4]
    search = {
        "classical RBF": (KernelRidge(kernel="rbf"), {"gamma": np.logspace(-2, 2, 9)}),
        "quantum fidelity": (
            QuantumKernelRidge(),
            {
                "kernel": [
                    QuantumKernel(ReuploadingMap(s), N_QUBITS, backend=args.backend) for s in np.logspace(-1, 1, 9)
                ]
            },
        ),
        "quantum projected": (
            QuantumKernelRidge(),
            {
                "kernel": [
                    QuantumKernel(ReuploadingMap(s), N_QUBITS, kind="projected", gamma=g, backend=args.backend)
                    for s in np.logspace(-1, 1, 9)
                    for g in (0.3, 1.0, 3.0)
                ]
            },
        ),
    }
    surfaces, rows = {"exact": spline_energy(r_grid, e_grid)}, {}
    for name, (estimator, grid) in tqdm(search.items(), desc="cross-validation", unit="model"):
        t0 = time.perf_counter()
        fitted = GridSearchCV(estimator, {**grid, "alpha": alphas}, cv=cv, scoring="neg_mean_absolute_error")
        fitted.fit(r_train[:, None], e_train - offset)
        best = fitted.best_estimator_
        energy = rbf_energy(best, offset) if name == "classical RBF" else quantum_energy(best, offset)
        check = energy(torch.tensor(r_test)).detach().numpy()
        assert np.allclose(check, best.predict(r_test[:, None]) + offset, atol=1e-10)  # torch model == sklearn
        e_pred, f_pred = energies_and_forces(energy, r_test)
        params = fitted.best_params_
        chosen = f"gamma={params['gamma']:.3g} A^-2" if "gamma" in params else f"{params['kernel'].feature_map!r}"
        if "kernel" in params and params["kernel"].kind == "projected":
            chosen += f", gamma={params['kernel'].gamma:g}"
        rows[name] = {
            "hyper-parameters (CV)": f"{chosen}, alpha={params['alpha']:.0e}",
            "E MAE mHa": 1000 * np.abs(e_pred - e_test).mean(),
            "F MAE mHa/A": 1000 * np.abs(f_pred - f_test).mean(),
            "fit s": time.perf_counter() - t0,
        }
        surfaces[name] = energy

    # ---------------------------------------------------------------- dynamics
    runs = {}
    for name, energy in tqdm(surfaces.items(), desc="velocity Verlet", unit="surface"):
        t0 = time.perf_counter()
        runs[name] = velocity_verlet(energy, args.r0, args.dt, args.steps)
        rows.setdefault(name, {"hyper-parameters (CV)": "FCI, spline every 0.01 A"})["MD s"] = time.perf_counter() - t0
    for name, run in runs.items():
        if name != "exact":
            rows[name]["max |r - r_exact| A"] = np.abs(run["r"] - runs["exact"]["r"]).max()
        rows[name]["period fs"] = period_fs(run["t"], run["r"])
        rows[name]["E drift mHa"] = 1000 * np.abs(run["total"] - run["total"][0]).max()

    # ---------------------------------------------------------------- table
    columns = [
        "hyper-parameters (CV)",
        "E MAE mHa",
        "F MAE mHa/A",
        "max |r - r_exact| A",
        "period fs",
        "E drift mHa",
        "fit s",
        "MD s",
    ]
    order = ["exact", "classical RBF", "quantum fidelity", "quantum projected"]
    print(
        f"\nH2 / STO-3G, FCI energies from PennyLane qchem; {n_tr} training and {n_te} test bond lengths in "
        f"[{args.r_min}, {args.r_max}] A; MD: {args.steps} velocity-Verlet steps of {args.dt} fs from r0 = "
        f"{args.r0} A at rest; quantum kernels: {N_QUBITS} qubits on {args.backend}\n"
    )
    print("| surface | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for name in order:
        cells = []
        for c in columns:
            v = rows[name].get(c, "")
            cells.append(v if isinstance(v, str) else f"{v:.3g}" if c != "max |r - r_exact| A" else f"{v:.2e}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\nexact-data generation {t_data:.1f} s, total {time.perf_counter() - start:.1f} s")

    # ---------------------------------------------------------------- figure
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 8))
    ax = fig.subplots(2, 2)
    styles = {"exact": "k-", "classical RBF": "C0--", "quantum fidelity": "C1-.", "quantum projected": "C2:"}
    for name in order:
        e, f = energies_and_forces(surfaces[name], r_grid)
        ax[0, 0].plot(r_grid, e, styles[name], label=name)
        ax[0, 1].plot(r_grid, f, styles[name], label=name)
        ax[1, 1].plot(runs[name]["t"], runs[name]["r"], styles[name], label=name)
        if name != "exact":
            e_pred, _ = energies_and_forces(surfaces[name], r_test)
            ax[1, 0].semilogy(r_test, 1000 * np.abs(e_pred - e_test) + 1e-6, styles[name][:2] + "o", label=name, ms=4)
    ax[0, 0].plot(r_train, e_train, "ks", mfc="none", label="training points")
    ax[0, 0].set(xlabel="bond length r (A)", ylabel="energy (Ha)", title="H2 potential-energy curve")
    ax[0, 1].set(xlabel="bond length r (A)", ylabel="force -dE/dr (Ha/A)", title="forces (autograd)")
    ax[1, 0].set(xlabel="bond length r (A)", ylabel="|E - E_exact| (mHa)", title="test energy errors")
    ax[1, 1].set(xlabel="time (fs)", ylabel="bond length (A)", title="velocity-Verlet dynamics")
    for a in ax.flat:
        a.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"figure: {png}")
    return rows


if __name__ == "__main__":
    main()
