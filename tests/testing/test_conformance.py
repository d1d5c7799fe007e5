"""The conformance suite passes every built-in backend and catches dishonest ones with a clear report."""

import sys
import textwrap

import pytest
import torch

from hybridai.cli import main
from hybridai.testing import Report, assert_conforms, conformance_checks, run_conformance
from hybridai.testing.suite import FAIL, PASS, SKIP, ConformanceError

BUILTINS = [
    "torch",
    "statevector",
    "pennylane:default.qubit",
    "pennylane:lightning.qubit",
    "pennylane:default.mixed",
    "aer",
    "aer:fake_manila",
    "density",
    "density:fake_manila",
    "akida",
    "loihi",
    "loihi2",
    "nengo",
    pytest.param("ibm:fake_manila", marks=pytest.mark.slow),  # about 14 s: local testing mode with 4096 shots
]


def _checks():
    for entry in BUILTINS:
        name, marks = (entry.values[0], entry.marks) if hasattr(entry, "values") else (entry, ())
        for check in conformance_checks(name):
            yield pytest.param(check, id=check.id, marks=marks)


@pytest.mark.parametrize("check", list(_checks()))
def test_builtin_backend_conforms(check):
    check()  # raises ConformanceError with the reason, or skips a capability the backend does not claim


def test_every_domain_has_its_checks():
    names = [c.name for c in conformance_checks("torch")]  # a Placement: placement checks per domain
    assert names[:3] == ["registration", "capabilities", "option errors"]
    assert "classical: exact values" in names and "spiking: thread safety" in names
    assert "classical: shared instance" in names and "spiking: shared instance" in names
    quantum = [c.name for c in conformance_checks("statevector")]  # a QuantumExecutor
    assert {"quantum: gradients", "quantum: shots per seed", "quantum: serialization"} <= set(quantum)
    assert quantum[-2:] == ["quantum: thread safety", "quantum: shared instance"]
    assert not any(n.startswith("classical") for n in quantum)
    chip = [c.name for c in conformance_checks("nengo")]  # a ChipCompiler
    assert chip[3:] == [
        "spiking: compile and run",
        "spiking: determinism",
        "spiking: errors on bad input",
        "spiking: shared instance",
    ]


def test_unknown_family_fails_registration_with_the_known_names():
    report = run_conformance("pennylan")
    assert [r.check for r in report.results] == ["registration"]
    assert not report.ok and "Did you mean: 'pennylane'" in report.failures[0].detail


def test_skips_say_what_is_not_claimed():
    report = run_conformance("torch")
    skipped = {r.check: r.detail for r in report.results if r.status == SKIP}
    assert skipped == {
        "classical: noise per seed": "outputs repeat exactly: nothing random to seed",
        "spiking: noise per seed": "outputs repeat exactly: nothing random to seed",
    }
    assert report.ok and report.counts()[FAIL] == 0


DISHONEST = '''
    import torch
    from hybridai import HybridModule, backends
    from hybridai.backends import (
        Execution, Placement, PlacementCapabilities, QuantumCapabilities, QuantumExecutor,
    )


    class NoisyQPU(QuantumExecutor):
        """Claims exact, but adds a small deterministic error to every expectation."""

        def __init__(self, target=None, **options):
            super().__init__(target, **options)
            self.inner = backends.get("statevector", **options)

        @property
        def capabilities(self):
            return QuantumCapabilities(differentiable=True, exact=True, diff_methods=("best", "backprop"))

        def execute(self, tapes, config):
            g = torch.Generator().manual_seed(0)
            run = self.inner.execute(tapes, config)
            out = []
            for result in run.results:
                parts = result if isinstance(result, tuple) else (result,)
                noisy = tuple(p + 0.01 * torch.randn(p.shape, generator=g, dtype=p.dtype) for p in parts)
                out.append(noisy if isinstance(result, tuple) else noisy[0])
            return Execution(out, run.stats)


    class _HalfGradient(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad * 0.5


    class HalfGradientQPU(NoisyQPU):
        """Exact values, but gradients half as large as they should be."""

        def execute(self, tapes, config):
            run = self.inner.execute(tapes, config)
            out = []
            for result in run.results:
                parts = result if isinstance(result, tuple) else (result,)
                halved = tuple(_HalfGradient.apply(p) for p in parts)
                out.append(halved if isinstance(result, tuple) else halved[0])
            return Execution(out, run.stats)


    class StreamQPU(NoisyQPU):
        """Per-call state: samples from ONE random stream kept on the instance (seeded by the first call)."""

        @property
        def capabilities(self):
            return QuantumCapabilities(differentiable=True, exact=True, shots=True, diff_methods=("best", "backprop"))

        def execute(self, tapes, config):
            if config.shots or any(t.shots for t in tapes):
                if getattr(self, "stream", None) is None:
                    self.stream = torch.Generator().manual_seed(config.seed or 0)
                config = config.replace(seed=int(torch.randint(2**31, (1,), generator=self.stream)))
            return self.inner.execute(tapes, config)


    class ListQPU(NoisyQPU):
        """Returns the bare list of results (the old contract), not an Execution."""

        def execute(self, tapes, config):
            return self.inner.execute(tapes, config).results


    class _Noisy(HybridModule):
        default_backend = "noisycpu"

        def __init__(self, inner, backend):
            super().__init__()
            self.inner = inner
            self.set_backend(backend)

        def forward(self, x):
            y = self.inner(x)
            return y + 1e-3 * torch.randn(y.shape, dtype=y.dtype)


    class NoisyCPU(Placement):
        """Claims exact, wraps every Linear in unseeded noise; swallows unknown options."""

        domains = ("classical",)

        @property
        def capabilities(self):
            return PlacementCapabilities(differentiable=True, exact=True)

        def place(self, module):
            if isinstance(module, torch.nn.Linear):
                return _Noisy(module, self)
            return module


    class _Seeded(HybridModule):
        default_backend = "countingcpu"

        def __init__(self, inner, backend, seed):
            super().__init__()
            self.inner = inner
            self.set_backend(backend)
            self.generator = torch.Generator().manual_seed(seed)

        def forward(self, x):
            y = self.inner(x)
            return y + 1e-3 * torch.randn(y.shape, generator=self.generator, dtype=y.dtype)


    class CountingCPU(Placement):
        """Per-call state: seeds each placed layer from seed= and a counter of the layers it placed so far."""

        domains = ("classical",)

        def __init__(self, target=None, *, seed=0):
            super().__init__(target, seed=seed)
            self.seed, self.count = seed, 0

        @property
        def capabilities(self):
            return PlacementCapabilities(differentiable=False, exact=False)

        def place(self, module):
            if not isinstance(module, torch.nn.Module):
                raise ValueError("not a module")
            if isinstance(module, torch.nn.Linear):
                self.count += 1
                return _Seeded(module, self, 1000 * self.seed + self.count)
            return module


    class UntypedCPU(NoisyCPU):
        """Describes itself with a plain dict instead of PlacementCapabilities."""

        @property
        def capabilities(self):
            return {"differentiable": True, "exact": True}
'''


@pytest.fixture
def dishonest(tmp_path, monkeypatch, fresh_registry):
    """Three dishonest plugins installed through an entry point of a temporary distribution."""
    (tmp_path / "dishonest_mod.py").write_text(textwrap.dedent(DISHONEST))
    info = tmp_path / "hybridai_dishonest-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hybridai-dishonest\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[hybridai.backends]\n"
        "noisyqpu = dishonest_mod:NoisyQPU\n"
        "halfgrad = dishonest_mod:HalfGradientQPU\n"
        "noisycpu = dishonest_mod:NoisyCPU\n"
        "streamqpu = dishonest_mod:StreamQPU\n"
        "listqpu = dishonest_mod:ListQPU\n"
        "untypedcpu = dishonest_mod:UntypedCPU\n"
        "countingcpu = dishonest_mod:CountingCPU\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("dishonest_mod", None)


def _by_check(report: Report) -> dict:
    return {r.check: r for r in report.results}


def test_claims_exact_but_noisy_fails_with_a_clear_report(dishonest, capsys):
    report = run_conformance("noisyqpu")
    rows = _by_check(report)
    assert rows["registration"].status == PASS and "plugin hybridai-dishonest" in rows["registration"].detail
    exact = rows["quantum: exact values"]
    assert exact.status == FAIL
    assert "claims exact=True but values of tape 0 differ by up to" in exact.detail
    assert "tolerance atol=1e-10" in exact.detail and "expected" in exact.detail
    assert rows["quantum: result layout"].status == PASS  # only the dishonest claim fails
    table = report.table()
    assert "FAIL" in table and "noisyqpu" in table

    assert main(["test-backend", "noisyqpu"]) == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "exact values" in x)
    assert line.split()[:5] == ["noisyqpu", "quantum:", "exact", "values", "FAIL"]
    assert out.splitlines()[-1].split()[3] == "FAIL"

    with pytest.raises(ConformanceError, match="noisyqpu fails .* conformance check"):
        assert_conforms("noisyqpu")
    check = next(c for c in conformance_checks("noisyqpu") if c.name == "quantum: exact values")
    with pytest.raises(ConformanceError, match="noisyqpu::quantum: exact values: claims exact=True"):
        check()


def test_wrong_gradients_fail(dishonest):
    rows = _by_check(run_conformance("halfgrad"))
    assert rows["quantum: exact values"].status == PASS
    assert rows["quantum: gradients"].status == FAIL
    assert "gradients w.r.t. inputs differ by up to" in rows["quantum: gradients"].detail


def test_dishonest_classical_backend_fails(dishonest):
    rows = _by_check(run_conformance("noisycpu"))
    assert rows["classical: placement"].status == PASS, rows["classical: placement"].detail
    assert rows["classical: exact values"].status == FAIL
    assert "claims exact=True but outputs differ" in rows["classical: exact values"].detail
    assert rows["option errors"].status == FAIL and "no error was raised" in rows["option errors"].detail
    assert rows["classical: errors on bad input"].status == FAIL  # place('not a module') is not refused
    assert rows["classical: thread safety"].status == FAIL  # unseeded noise: not what the serial run gave


def test_per_call_state_fails(dishonest):
    """A random stream kept on the instance: the same seed gives other samples on a second call, and an
    instance shared by threads gives other results than fresh instances."""
    rows = _by_check(run_conformance("streamqpu"))
    assert rows["quantum: exact values"].status == PASS and rows["quantum: thread safety"].status == PASS
    assert rows["quantum: shots per seed"].status == FAIL
    detail = rows["quantum: shots per seed"].detail
    assert "seed=11 gave different samples on a second call on the same instance" in detail
    assert rows["quantum: shared instance"].status == FAIL
    assert "vs the same work run serially" in rows["quantum: shared instance"].detail


def test_placement_counting_its_calls_fails_the_shared_instance_check(dishonest):
    """Seeds drawn from a counter on the backend: fine for one instance per model, wrong when one instance
    places models from several threads (the noise depends on who came first)."""
    rows = _by_check(run_conformance("countingcpu"))
    assert rows["classical: noise per seed"].status == PASS and rows["classical: thread safety"].status == PASS
    assert rows["classical: shared instance"].status == FAIL
    assert "vs the same work run serially" in rows["classical: shared instance"].detail


def test_old_shapes_fail(dishonest):
    """execute() returning a bare list, capabilities that are not the contract's typed record."""
    rows = _by_check(run_conformance("listqpu"))
    assert rows["registration"].status == PASS
    assert rows["quantum: result layout"].status == FAIL
    assert "execute() returned list; accepted: hybridai.backends.Execution" in rows["quantum: result layout"].detail
    rows = _by_check(run_conformance("untypedcpu"))
    assert rows["capabilities"].status == FAIL
    assert "capabilities is dict, not hybridai.backends.PlacementCapabilities" in rows["capabilities"].detail


def test_cli_passes_options_and_exits_zero(capsys):
    assert main(["test-backend", "statevector", "-o", "dtype='complex128'", "-o", "fuse_max_qubits=0"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["backend", "check", "result"]
    assert out.splitlines()[-1].split()[:4] == ["total", "11", "checks", "PASS"]


def test_cli_rejects_malformed_option(capsys):
    with pytest.raises(SystemExit) as info:
        main(["test-backend", "torch", "-o", "novalue"])
    assert info.value.code == 2 and "is not key=value" in capsys.readouterr().err


def test_exact_tolerance_can_be_loosened():
    torch.manual_seed(0)
    checks = conformance_checks("statevector", {"dtype": "complex64"})
    exact = next(c for c in checks if c.name == "quantum: exact values").run()
    assert exact.status == FAIL  # complex64 is not exact to 1e-10 ...
    loose = conformance_checks("statevector", {"dtype": "complex64"}, atol=1e-5)
    assert next(c for c in loose if c.name == "quantum: exact values").run().status == PASS  # ... but to 1e-5


def test_cli_help_and_lazy_attribute():
    import subprocess

    out = subprocess.run(
        [sys.executable, "-m", "hybridai", "test-backend", "--help"], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("usage: hybridai test-backend") and "KEY=VALUE" in out.stdout
    code = "import sys, hybridai; assert 'hybridai.testing' not in sys.modules; print(hybridai.testing.run_conformance)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and "run_conformance" in out.stdout, out.stderr
