import pytest

from hybridai.core.errors import (
    BackendNotFoundError,
    BackendUnavailableError,
    ConfigError,
    HybridAIError,
    MissingExtraError,
    ShapeError,
    invalid,
    suggest,
)


@pytest.mark.parametrize(
    "cls", [ConfigError, ShapeError, BackendNotFoundError, BackendUnavailableError, MissingExtraError]
)
def test_every_error_is_a_hybridai_error(cls):
    assert issubclass(cls, HybridAIError)


def test_invalid_names_argument_value_and_accepted():
    err = invalid("n_qubits", -3, "a positive int")
    assert isinstance(err, ConfigError)
    assert str(err) == "n_qubits=-3 is not valid; accepted: a positive int"
    assert isinstance(invalid("inputs", 1, "x", ShapeError), ShapeError)


def test_missing_extra_names_the_pip_extra():
    err = MissingExtraError("akida", "akida", "the Akida backend")
    # the command that works before hybridai is published comes first: an editable install from a clone
    assert "pip install -e '.[akida]' in a clone of hybridai" in str(err)
    assert str(err).index("pip install -e '.[akida]'") < str(err).index("pip install 'hybridai[akida]'")
    assert isinstance(err, ImportError)


def test_suggest_closest_names():
    assert "'pennylane'" in suggest("pennylan", ["pennylane", "torch"])
    assert suggest("zzzz", ["pennylane", "torch"]) == ""
