"""The noisy-device molecular example (--quick: H2 only): the table's structure, the cache, the PNG, and what ZNE
does to the Gram matrices on the fixed seed."""

import contextlib
import io
import json

import pytest
import torch

from tests.examples import load_example

SLOW = pytest.mark.slow  # the tests of the quick run: about 13 s for the run they share


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("molecular") / "new" / "dir"
    printed = io.StringIO()
    threads = torch.get_num_threads()
    try:
        with contextlib.redirect_stdout(printed):
            result = load_example("molecular_noise").main(["--quick", "--out", str(out)])
        assert torch.get_num_threads() == 1  # the script's default: small circuits, one thread
    finally:
        torch.set_num_threads(threads)  # the script owns its process; a test does not
    return out, result, printed.getvalue()


def _row(result, kernel, route):
    (row,) = [r for r in result["rows"] if r["kernel"] == kernel and r["route"] == route]
    return row


@SLOW
def test_quick_run_prints_one_full_table_and_writes_into_a_new_folder(quick):
    out, result, printed = quick
    routes = ("exact", "noisy", "ZNE Richardson", "ZNE exponential")
    expected = [("exact (FCI)", ""), ("classical RBF", "exact")]
    expected += [(k, r) for k in ("quantum fidelity", "quantum projected") for r in routes]
    assert [(r["kernel"], r["route"]) for r in result["rows"]] == expected
    assert {r["system"] for r in result["rows"]} == {"H2"}
    for kernel in ("quantum fidelity", "quantum projected"):
        exact, noisy, rich, expo = (_row(result, kernel, r) for r in routes)
        assert exact["shots"] == 0 and noisy["shots"] > 0
        assert rich["shots"] == expo["shots"] == rich["circuits"] * 2000  # 2000 shots per circuit
        assert rich["circuits"] > 2 * noisy["circuits"] / 3  # 3 scale factors (the noisy route adds a device scan)
        for row in (exact, noisy, rich, expo):
            assert row["E MAE mHa"] > 0 and row["F MAE mHa/A"] > 0 and row["wall s"] > 0
            assert "(" in row["PSD repair |dK|_F (neg. eigs)"]
        assert all(row["Gram err F"] >= row["Gram err max"] > 0 for row in (noisy, rich, expo))
    # the projected kernel measures N points (3 bases), the fidelity kernel N(N-1)/2 + G N pairs
    assert (
        _row(result, "quantum projected", "noisy")["circuits"] < _row(result, "quantum fidelity", "noisy")["circuits"]
    )
    assert result["png"] == out / "molecular_noise.png" and result["png"].stat().st_size > 20_000
    cache = json.loads((out / "qchem_energies.json").read_text())
    assert len(cache) > 20 and all(k.startswith("fci/sto-3g/charge=0/H-H/") for k in cache)
    assert printed.count("| H2 |") == len(expected) and "'+12%' claim measured" in printed
    assert result["device"] == "density:fake_jakarta"  # the default route: hybridai's density matrices
    assert "device routes (noisy, ZNE): density:fake_jakarta (hybridai's density matrices in torch)" in printed


@SLOW
def test_zne_brings_the_fidelity_gram_matrix_closer_to_the_exact_one(quick):
    _, result, _ = quick
    noisy = _row(result, "quantum fidelity", "noisy")["Gram err F"]
    assert _row(result, "quantum fidelity", "ZNE Richardson")["Gram err F"] < noisy
    assert _row(result, "quantum fidelity", "ZNE exponential")["Gram err F"] < noisy


@pytest.mark.parametrize(
    ("argv", "device"),
    [
        ([], "density:fake_jakarta"),
        (["--route", "aer"], "aer:fake_jakarta"),
        (["--device", "ibm:fake_jakarta"], "ibm:fake_jakarta"),
    ],
)
def test_the_route_picks_what_simulates_the_device(monkeypatch, tmp_path, argv, device):
    module = load_example("molecular_noise")
    seen = []
    monkeypatch.setattr(module, "run", seen.append)
    monkeypatch.setattr(module.torch, "set_num_threads", lambda n: seen.append(n))
    module.main([*argv, "--threads", "2", "--out", str(tmp_path)])
    assert seen.pop(0) == 2
    assert [args.device for args in seen] == [device]


def test_a_route_and_a_device_together_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        load_example("molecular_noise").main(["--route", "aer", "--device", "aer:fake_manila", "--out", str(tmp_path)])
    assert info.value.code == 2 and "--route aer and --device aer:fake_manila: give one" in capsys.readouterr().err
