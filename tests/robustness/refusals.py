"""The one way robustness tables check a refusal: ``call(value)`` raises a HybridAIError of the expected type."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

from hybridai.core.errors import HybridAIError


def refusal(call: Callable[[Any], Any], value: Any, error: type[HybridAIError]) -> str:
    """The message of the ``error`` that ``call(value)`` raises (warnings silenced); fails on anything else."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(HybridAIError) as caught:
            call(value)
    assert isinstance(caught.value, error), f"{type(caught.value).__name__}: {caught.value}"
    return str(caught.value)
