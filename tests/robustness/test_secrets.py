"""Secrets (IBM tokens, anything given as token=/api_key=/password=/secret=/instance=) never appear in
errors, reprs, CLI output or log output; hybridai's log redaction leaves everyone else's logging alone."""

import contextlib
import io
import logging

import pennylane as qml
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hybridai
from hybridai import backends
from hybridai.backends import Placement, PlacementCapabilities
from hybridai.cli import main
from hybridai.core import redaction, registry
from hybridai.core.errors import BackendUnavailableError, ConfigError, HybridAIError

TOKEN = "tok-5e3c9d1f-SECRET"  # given as an option
ENV_TOKEN = "env-8a7b6c5d-SECRET"  # in QISKIT_IBM_TOKEN


@pytest.fixture(autouse=True)
def clean_secrets(monkeypatch):
    monkeypatch.setattr(registry, "_registered", dict(registry._registered))
    redaction.forget()
    yield
    redaction.forget()


def one_qubit(inputs, weights):
    qml.RY(inputs[..., 0] * weights[0], wires=0)
    return qml.expval(qml.PauliZ(0))


class Keeper(Placement):
    """A placement that accepts any option (as a plugin for a cloud device would)."""

    @property
    def capabilities(self):
        return PlacementCapabilities()

    def place(self, module):
        return module


class Leaker(Keeper):
    """A constructor that puts its token into the error it raises."""

    def __init__(self, target=None, *, token=None):
        raise RuntimeError(f"login with {token} refused")


class TypedLeaker(Keeper):
    def __init__(self, target=None, *, api_key=None):
        raise ConfigError(f"api_key={api_key!r} is not valid; accepted: a key of 32 characters")


def _cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue() + err.getvalue()


# (what is called, the error class, the names the message must carry)
ERRORS = [
    ("ibm account device, token=", lambda: backends.get("ibm:ibm_brisbane", token=TOKEN), ConfigError, ["token"]),
    ("ibm fake device, token=", lambda: backends.get("ibm:fake_manila", token=TOKEN), ConfigError, ["token"]),
    ("ibm, instance=", lambda: backends.get("ibm:fake_manila", instance=TOKEN), ConfigError, ["instance"]),
    ("aer, api_key=", lambda: backends.get("aer", api_key=TOKEN), ConfigError, ["api_key"]),
    ("torch, token=", lambda: backends.get("torch", token=TOKEN), ConfigError, ["token"]),
    ("torch, two secrets", lambda: backends.get("torch", token=TOKEN, password=TOKEN + "2"), ConfigError, ["token"]),
    ("loihi, api_key=", lambda: backends.get("loihi", api_key=TOKEN), ConfigError, ["api_key"]),
    ("statevector, password=", lambda: backends.get("statevector", password=TOKEN), ConfigError, ["password"]),
    ("pennylane, secret=", lambda: backends.get("pennylane", secret=TOKEN), ConfigError, ["secret"]),
    ("nengo, credentials={}", lambda: backends.get("nengo", credentials={"t": TOKEN}), ConfigError, ["credentials"]),
    (
        "QuantumLayer(backend=ibm, token=)",
        lambda: hybridai.QuantumLayer(one_qubit, 1, {"weights": 1}, backend="ibm:ibm_brisbane", token=TOKEN),
        ConfigError,
        ["token"],
    ),
    (
        "place(quantum=ibm, token=)",
        lambda: hybridai.place(torch.nn.Linear(2, 2), quantum="ibm:ibm_brisbane", token=TOKEN),
        ConfigError,
        ["token"],
    ),
    ("plugin constructor raising it", lambda: backends.get("leaker", token=TOKEN), BackendUnavailableError, ["leaker"]),
    ("plugin's typed error", lambda: backends.get("typedleaker", api_key=TOKEN), ConfigError, ["api_key"]),
]


@pytest.mark.parametrize(("what", "call", "error", "names"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_never_show_a_secret(what, call, error, names):
    backends.register("leaker")(Leaker)
    backends.register("typedleaker")(TypedLeaker)
    with pytest.raises(error) as info:
        call()
    assert isinstance(info.value, HybridAIError)
    message = str(info.value)
    assert TOKEN not in message and all(n in message for n in names), message
    chained = [info.value.__cause__, info.value.__context__]
    assert all(TOKEN not in str(e) for e in chained if e is not None)


def test_reprs_mask_secret_options_and_hide_known_values():
    backends.register("keeper")(Keeper)
    backend = backends.get("keeper", token=TOKEN, gain=2, note=f"uses {TOKEN}")
    text = repr(backend)
    assert TOKEN not in text and "token='***'" in text and "gain=2" in text and "note='uses ***'" in text


def test_cli_test_backend_never_prints_the_token():
    for name in ("torch", "ibm:x"):
        code, text = _cli("test-backend", name, "-o", f"token={TOKEN}", "--full")
        assert code == 1 and TOKEN not in text and "token" in text


def test_environment_token_and_saved_account_are_redacted(monkeypatch, tmp_path):
    monkeypatch.setenv("QISKIT_IBM_TOKEN", ENV_TOKEN)
    monkeypatch.setenv("HOME", str(tmp_path))
    import qiskit_ibm_runtime

    class Service:
        def __init__(self):
            raise RuntimeError(f"401: token {ENV_TOKEN} and {TOKEN} refused")

    saved = type("Account", (), {"token": TOKEN, "instance": "crn:v1:instance-123"})()
    from qiskit_ibm_runtime.accounts import AccountManager

    monkeypatch.setattr(AccountManager, "get", staticmethod(lambda *a, **k: saved))
    monkeypatch.setattr(qiskit_ibm_runtime, "QiskitRuntimeService", Service)
    with pytest.raises(BackendUnavailableError) as info:
        backends.get("ibm:ibm_kyiv")
    assert ENV_TOKEN not in str(info.value) and TOKEN not in str(info.value) and "***" in str(info.value)


# ---------------------------------------------------------------- log output


@pytest.fixture
def captured(monkeypatch):
    """Secrets known (environment and option), an ibm backend built; a handler on the root logger and on
    qiskit-ibm-runtime's (which does not propagate to the root)."""
    monkeypatch.setenv("QISKIT_IBM_TOKEN", ENV_TOKEN)
    factory = logging.getLogRecordFactory()
    with pytest.raises(ConfigError):
        backends.get("statevector", token=TOKEN)  # remembered, although refused
    backends.get("ibm:fake_manila")
    assert logging.getLogRecordFactory() is factory  # the process-wide record factory is never replaced
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(name)s|%(message)s"))
    tops = [logging.getLogger(), logging.getLogger("qiskit_ibm_runtime")]
    for top in tops:
        top.addHandler(handler)
    stream.handler = handler
    yield stream
    for top in tops:
        top.removeHandler(handler)


def _fail(secret):
    try:
        try:
            raise KeyError(secret)
        except KeyError as inner:
            raise RuntimeError(f"401 Unauthorized for {secret}") from inner
    except RuntimeError as exc:
        return exc


def _log_exception(logger, secret):
    try:
        raise _fail(secret)
    except RuntimeError:
        logger.exception("job failed")


STYLES = {
    "str": lambda log, s: log.error(f"token {s}"),
    "%s tuple": lambda log, s: log.error("token %s of %s", s, "me"),
    "dict-style": lambda log, s: log.error("token %(token)s", {"token": s}),
    "exception argument": lambda log, s: log.error("failed: %s", _fail(s)),
    "tuple argument": lambda log, s: log.error("account %s", ("me", s)),
    "dict argument": lambda log, s: log.error("account %s", {"token": s}),
    "exc_info": lambda log, s: log.error("failed", exc_info=_fail(s)),
    "logger.exception": _log_exception,
    "extra": lambda log, s: log.error("with extra", extra={"credential": s}),
}
LOGGERS = ["hybridai", "hybridai.qiskit", "qiskit_ibm_runtime", "qiskit_ibm_runtime.api.session"]


@pytest.mark.parametrize("secret", [TOKEN, ENV_TOKEN], ids=["option", "environment"])
@pytest.mark.parametrize("logger", LOGGERS)
@pytest.mark.parametrize("style", list(STYLES))
def test_log_output_never_shows_a_secret(captured, style, logger, secret):
    log = logging.getLogger(logger)
    STYLES[style](log, secret)
    text = captured.getvalue()
    if style == "extra":
        captured.handler.setFormatter(logging.Formatter("%(name)s|%(credential)s"))
        log.error("again", extra={"credential": secret})
        text = captured.getvalue()
    assert text and secret not in text, text
    assert "***" in text


def test_loggers_created_later_are_covered_by_the_next_ibm_backend(captured):
    late = logging.getLogger("qiskit_ibm_runtime.created_later")
    backends.get("ibm:fake_manila")
    late.error("token %s", TOKEN)
    assert TOKEN not in captured.getvalue() and "token ***" in captured.getvalue()


def test_everyone_elses_logging_is_untouched(captured):
    other = logging.getLogger("someapp.db")
    other.error("user %(name)s logged in from %(ip)s", {"name": "bob", "ip": "10.0.0.1"})
    other.error("plain %s and %d", "text", 3)
    logging.getLogger("hybridai").error("layer %(name)s", {"name": "q1"})  # no secret: left exactly as it is
    text = captured.getvalue()
    assert "someapp.db|user bob logged in from 10.0.0.1" in text and "plain text and 3" in text
    assert "hybridai|layer q1" in text


def test_dict_style_record_keeps_its_arguments_when_it_has_no_secret(captured):
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    keep = Keep()
    logging.getLogger().addHandler(keep)
    try:
        logging.getLogger("hybridai.qiskit").error("user %(name)s", {"name": "bob"})
    finally:
        logging.getLogger().removeHandler(keep)
    assert records[0].args == {"name": "bob"} and records[0].getMessage() == "user bob"


# ------------------------------------------------------------------ any secret, any text

SECRET_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=4, max_size=24)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(secret=SECRET_TEXT, before=st.text(max_size=12), after=st.text(max_size=12), name=st.sampled_from(
    ["token", "api_key", "ApiKey", "password", "client_secret", "instance", "credentials", "auth_header"]
))  # fmt: skip
def test_any_secret_is_hidden_from_text_and_reprs(secret, before, after, name):
    redaction.forget()
    redaction.remember_options({name: secret, "shots": 10})
    assert secret not in redaction.redact(f"{before}{secret}{after}{secret}")
    assert secret not in redaction.describe_options({name: secret, "note": f"{before}{secret}"})
    record = logging.LogRecord("hybridai", logging.ERROR, __file__, 1, "%(v)s!", ({"v": secret},), None)
    assert record.args == {"v": secret}  # dict-style, as logging builds it
    redaction.RedactingFilter().filter(record)
    assert secret not in record.getMessage() and record.getMessage().endswith("!")
