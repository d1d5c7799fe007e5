"""Hostile plugins: ones that exit, raise, answer the wrong type, shadow or replace a built-in. Each is listed
as unavailable with its reason; nothing else breaks, and no built-in is ever replaced."""

import sys
import textwrap

import pennylane as qml
import pytest
import torch

import hybridai
from hybridai import backends
from hybridai.backends import QuantumCapabilities, QuantumExecutor
from hybridai.cli import main
from hybridai.core import registry
from hybridai.core.errors import BackendUnavailableError, ConfigError, HybridAIError
from hybridai.quantum.statevector.backend import StatevectorBackend
from hybridai.testing import conformance_checks, run_conformance
from tests.test_cli import table_rows

HOSTILE = """
    import sys

    from hybridai.backends import Availability, Placement, PlacementCapabilities, QuantumCapabilities
    from hybridai.backends import QuantumExecutor


    class Good(Placement):
        @property
        def capabilities(self):
            return PlacementCapabilities()

        def place(self, module):
            return module


    class ExitsInAvailable(Good):
        @classmethod
        def is_available(cls):
            sys.exit("no driver, bye")


    class ExitsInConstructor(Good):
        def __init__(self, target=None):
            sys.exit(4)


    class ExitsInCapabilities(Good):
        @property
        def capabilities(self):
            raise SystemExit(5)


    class RaisesInConstructor(Good):
        def __init__(self, target=None, **options):
            raise RuntimeError("firmware handshake failed")


    class DictCapabilities(QuantumExecutor):
        @property
        def capabilities(self):
            return {"differentiable": True, "diff_methods": ("best",)}

        def execute(self, tapes, config):
            raise NotImplementedError


    class NoneCapabilities(Good):
        @property
        def capabilities(self):
            return None


    class StringDomains(Good):
        domains = "classical"


    class AvailabilityWithObject(Good):
        @classmethod
        def is_available(cls):
            return Availability(True, object())
"""

ENTRY_POINTS = {  # entry point -> what `available()` must say about it (None: available)
    "exitsonimport": "SystemExit: 3 (it called sys.exit)",
    "exitsinavailable": "is_available() raised SystemExit: no driver, bye (it called sys.exit)",
    "exitsinconstructor": "default instance failed: SystemExit: 4 (it called sys.exit)",
    "exitsincapabilities": "default instance failed: SystemExit: 5 (it called sys.exit)",
    "raisesinconstructor": "default instance failed: RuntimeError: firmware handshake failed",
    "dictcaps": "capabilities is a dict, not hybridai.backends.QuantumCapabilities",
    "nonecaps": None,  # None is "no default capabilities"; get() refuses it below
    "stringdomains": "domains='classical'",
    "renamesbuiltin": "is the class of the built-in family 'statevector'",
    "oddreason": None,
}


@pytest.fixture
def hostile(tmp_path, monkeypatch, fresh_registry):
    """An installed distribution of hostile plugins, plus one that shadows a built-in."""
    (tmp_path / "hostile_mod.py").write_text(textwrap.dedent(HOSTILE))
    (tmp_path / "exits_mod.py").write_text("import sys\nsys.exit(3)\n")
    info = tmp_path / "hybridai_hostile-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hybridai-hostile\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[hybridai.backends]\n"
        "exitsonimport = exits_mod:Backend\n"
        "exitsinavailable = hostile_mod:ExitsInAvailable\n"
        "exitsinconstructor = hostile_mod:ExitsInConstructor\n"
        "exitsincapabilities = hostile_mod:ExitsInCapabilities\n"
        "raisesinconstructor = hostile_mod:RaisesInConstructor\n"
        "dictcaps = hostile_mod:DictCapabilities\n"
        "nonecaps = hostile_mod:NoneCapabilities\n"
        "stringdomains = hostile_mod:StringDomains\n"
        "renamesbuiltin = hybridai.quantum.statevector.backend:StatevectorBackend\n"
        "oddreason = hostile_mod:AvailabilityWithObject\n"
        "statevector = hostile_mod:Good\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_registered", dict(registry._registered))
    yield info
    for name in ("hostile_mod", "exits_mod"):
        sys.modules.pop(name, None)


def test_every_hostile_plugin_is_listed_with_its_reason(hostile):
    rows = {r.name: r for r in backends.available()}  # no SystemExit escapes
    for name, reason in ENTRY_POINTS.items():
        row = rows[name]
        assert "hybridai-hostile" in row.source, row
        if reason is None:
            continue
        assert not row.available and reason in row.reason, (name, row.reason)
    assert rows["torch"].available and rows["statevector"].available


def test_a_plugin_named_like_a_built_in_is_listed_and_never_used(hostile):
    rows = {r.name: r for r in backends.available()}
    assert rows["statevector"].source == "built-in" and rows["statevector"].contract == "quantum executor"
    shadow = rows["statevector (hybridai-hostile)"]
    assert not shadow.available and "shadows the built-in 'statevector'" in shadow.reason
    assert isinstance(backends.get("statevector"), StatevectorBackend)
    assert "hostile_mod" not in sys.modules or not hasattr(sys.modules["hostile_mod"], "statevector")


def test_a_plugin_pointing_at_a_built_in_class_never_renames_it(hostile):
    backends.available()
    assert StatevectorBackend.family == "statevector" and backends.get("statevector").name == "statevector"
    with pytest.raises(BackendUnavailableError, match="renamesbuiltin.*built-in family 'statevector'"):
        backends.get("renamesbuiltin")


def test_cli_lists_hostile_plugins_and_exits_normally(hostile, capsys):
    assert main(["backends"]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert rows["exitsonimport"]["available"] == "no" and "SystemExit: 3" in rows["exitsonimport"]["reason"]
    assert "shadows the built-in" in rows["statevector (hybridai-hostile)"]["reason"]
    assert rows["statevector"]["available"] == "yes" and rows["statevector"]["source"] == "built-in"
    for name in ("exitsonimport", "exitsinavailable", "exitsinconstructor", "exitsincapabilities", "dictcaps"):
        assert main(["test-backend", name]) == 1  # a FAIL table, not an exit
        assert table_rows(capsys.readouterr().out)[name]["result"] == "FAIL"


# (call, error class, what the message must name)
GET_ERRORS = [
    ("exitsonimport", BackendUnavailableError, ["exitsonimport", "hybridai-hostile", "SystemExit"]),
    ("exitsinavailable", BackendUnavailableError, ["exitsinavailable", "no driver"]),
    ("exitsinconstructor", BackendUnavailableError, ["exitsinconstructor", "hybridai-hostile", "SystemExit: 4"]),
    ("exitsincapabilities", BackendUnavailableError, ["exitsincapabilities", "hybridai-hostile", "SystemExit: 5"]),
    ("raisesinconstructor", BackendUnavailableError, ["raisesinconstructor", "hybridai-hostile", "firmware"]),
    ("dictcaps", BackendUnavailableError, ["dictcaps", "dict", "QuantumCapabilities"]),
    ("nonecaps", BackendUnavailableError, ["nonecaps", "NoneType", "PlacementCapabilities"]),
    ("stringdomains", BackendUnavailableError, ["stringdomains", "domains='classical'"]),
    ("exitsinconstructor:target", BackendUnavailableError, ["exitsinconstructor:target"]),
]


@pytest.mark.parametrize(("name", "error", "names"), GET_ERRORS, ids=[g[0] for g in GET_ERRORS])
def test_get_gives_a_typed_error_naming_the_plugin(hostile, name, error, names):
    with pytest.raises(error) as info:
        backends.get(name)
    assert all(n in str(info.value) for n in names), str(info.value)


def test_layers_never_see_untyped_capabilities(hostile):
    def circuit(inputs, weights):
        qml.RY(inputs[..., 0] * weights[0], wires=0)
        return qml.expval(qml.PauliZ(0))

    with pytest.raises(BackendUnavailableError, match="dictcaps"):
        hybridai.QuantumLayer(circuit, 1, {"weights": 1}, backend="dictcaps")
    with pytest.raises(BackendUnavailableError, match="nonecaps"):
        hybridai.place(torch.nn.Linear(2, 2), classical="nonecaps")


def test_keyboard_interrupt_in_a_plugin_still_stops_the_program(tmp_path, monkeypatch, fresh_registry):
    (tmp_path / "ctrlc_mod.py").write_text("raise KeyboardInterrupt\n")
    info = tmp_path / "hybridai_ctrlc-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hybridai-ctrlc\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[hybridai.backends]\nctrlc = ctrlc_mod:Backend\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(KeyboardInterrupt):
            backends.get("ctrlc")
    finally:
        sys.modules.pop("ctrlc_mod", None)


# ------------------------------------------------------------- run-time registration


class MyQPU(QuantumExecutor):
    @property
    def capabilities(self):
        return QuantumCapabilities()

    def execute(self, tapes, config):
        raise NotImplementedError


class MySubclassOfABuiltin(StatevectorBackend):
    pass


@pytest.fixture
def isolated(monkeypatch):
    monkeypatch.setattr(registry, "_registered", dict(registry._registered))


@pytest.mark.parametrize(
    "family", ["statevector", "torch", "pennylane", "aer", "density", "ibm", "loihi", "loihi2", "akida", "nengo"]
)
def test_register_never_replaces_a_built_in(isolated, family):
    before = registry.backend_class(family)
    with pytest.raises(ConfigError) as info:
        backends.register(family)(MyQPU)
    assert f"family={family!r}" in str(info.value) and "built-in" in str(info.value)
    assert registry.backend_class(family) is before and family not in registry._registered
    assert {r.name: r for r in backends.available()}[family].source == "built-in"


def test_a_built_in_class_cannot_be_registered_under_another_name(isolated):
    with pytest.raises(ConfigError, match="cls=.*built-in family 'statevector'"):
        backends.register("mysv")(StatevectorBackend)
    assert StatevectorBackend.family == "statevector" and "mysv" not in backends.families()
    backends.register("mysv")(MySubclassOfABuiltin)  # a subclass may serve another name
    assert backends.get("mysv").name == "mysv" and backends.get("statevector").name == "statevector"


def test_registering_the_same_name_again_replaces_the_earlier_registration(isolated):
    backends.register("myqpu")(MyQPU)

    class MyQPU2(MyQPU):
        pass

    backends.register("myqpu")(MyQPU2)
    assert type(backends.get("myqpu")) is MyQPU2


# ----------------------------------------------------------------- bad arguments

BAD = [
    ("run_conformance atol=-1", lambda: run_conformance("torch", atol=-1), ConfigError, ["atol=-1"]),
    ("run_conformance atol=nan", lambda: run_conformance("torch", atol=float("nan")), ConfigError, ["atol=nan"]),
    ("run_conformance atol=inf", lambda: run_conformance("torch", atol=float("inf")), ConfigError, ["atol=inf"]),
    ("run_conformance atol=True", lambda: run_conformance("torch", atol=True), ConfigError, ["atol=True"]),
    ("run_conformance atol='1e-3'", lambda: run_conformance("torch", atol="1e-3"), ConfigError, ["atol='1e-3'"]),
    ("conformance_checks atol=-1", lambda: conformance_checks("torch", atol=-1e-9), ConfigError, ["atol=-1e-09"]),
    ("run_conformance backends=[]", lambda: run_conformance([]), ConfigError, ["backends=[]"]),
    ("run_conformance backends=3", lambda: run_conformance(3), ConfigError, ["backends=3"]),
    ("conformance_checks options='x'", lambda: conformance_checks("torch", "x"), ConfigError, ["options='x'"]),
    ("conformance_checks backend=''", lambda: conformance_checks(""), ConfigError, ["backend=''"]),
    ("register family=''", lambda: backends.register(""), ConfigError, ["family=''"]),
    ("register family=3", lambda: backends.register(3), ConfigError, ["family=3"]),
    ("register cls=int", lambda: backends.register("ok")(int), ConfigError, ["cls="]),
    ("get('')", lambda: backends.get(""), ConfigError, ["backend=''"]),
    ("get(None)", lambda: backends.get(None), ConfigError, ["backend=None"]),
    ("get statevector unknown option", lambda: backends.get("statevector", colour=1), ConfigError, ["colour"]),
    ("place(None)", lambda: hybridai.place(None), ConfigError, ["model="]),
    ("place(None, quantum=)", lambda: hybridai.place(None, quantum="statevector"), ConfigError, ["model="]),
    ("place('model.pt')", lambda: hybridai.place("model.pt"), ConfigError, ["model="]),
]


@pytest.mark.parametrize(("what", "call", "error", "names"), BAD, ids=[b[0] for b in BAD])
def test_bad_arguments_give_typed_errors_naming_them(isolated, what, call, error, names):
    with pytest.raises(error) as info:
        call()
    assert isinstance(info.value, HybridAIError)
    message = str(info.value)
    assert all(n in message for n in names) and "accepted" in message, message


@pytest.mark.parametrize("atol", ["-1", "nan", "inf", "-1e-12"])
def test_cli_refuses_a_bad_atol(atol, capsys):
    assert main(["test-backend", "torch", f"--atol={atol}"]) == 2
    err = capsys.readouterr().err
    assert "atol=" in err and "finite number >= 0" in err
