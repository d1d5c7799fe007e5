"""The extra CPU code paths of `make test` really run: a capability asked for in ATEN_CPU_CAPABILITY is the one
torch dispatches to (a misspelt or ignored value would run the same path twice and hide rounding differences)."""

from __future__ import annotations

import os
import platform

import pytest
import torch

ASKED = os.environ.get("ATEN_CPU_CAPABILITY")


@pytest.mark.skipif(ASKED is None, reason="ATEN_CPU_CAPABILITY is not set in this run")
@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 capabilities only")
def test_the_asked_cpu_capability_is_the_one_in_use():
    assert torch.backends.cpu.get_cpu_capability().lower() == ASKED.lower()


def test_numerics_runs_are_marked(request):
    # this file is in the numerics set: the marker that selects the extra runs is applied
    assert request.node.get_closest_marker("numerics") is not None
