"""Habits from PyTorch, notebooks and the command line: misspelt place() keywords, summary in a notebook,
--version, a quiet profiler."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import hybridai
from hybridai.cli import main
from hybridai.core.errors import ConfigError


@pytest.mark.parametrize(("typo", "meant"), [("qunatum", "quantum"), ("clasical", "classical"), ("spikng", "spiking")])
def test_a_misspelt_domain_in_place_is_an_error_naming_the_right_one(typo, meant):
    model = nn.Sequential(nn.Linear(3, 2))
    with pytest.raises(ConfigError, match=f"{typo}=.*Did you mean: '{meant}'"):
        hybridai.place(model, **{typo: "torch"})


def test_place_refuses_options_when_no_backend_is_named_and_never_shows_their_value():
    with pytest.raises(ConfigError) as info:
        hybridai.place(nn.Linear(3, 2), token="SECRET-123")
    assert "token=" in str(info.value) and "SECRET-123" not in str(info.value)


def test_summary_is_returned_not_printed_and_its_repr_is_the_table(capsys):
    table = hybridai.summary(nn.Sequential(nn.Linear(3, 2), hybridai.LIF(0.9)))
    assert capsys.readouterr().out == ""  # a notebook shows the returned value once
    assert repr(table) == str(table) and "LIF" in repr(table) and "\\n" not in repr(table)
    hybridai.summary(nn.Linear(3, 2), show=True)
    assert "Linear" in capsys.readouterr().out


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"hybridai {hybridai.__version__}"


def test_profile_prints_nothing_of_its_own(capfd):
    hybridai.profile(nn.Sequential(nn.Linear(4, 4)), torch.zeros(2, 4))
    out, err = capfd.readouterr()
    assert "profiler_start" not in out + err and "USDT" not in out + err
