"""Hostile input files and arguments for the ``hybridai`` command. ``deploy-report`` reads files that may
come from anyone: a crafted file is refused and never runs (its payload would write a marker file);
every bad file or argument gives exit status 2 and a message naming it."""

import contextlib
import io
import os
import pickle
import zipfile

import numpy as np
import pytest
import torch
from torch import nn

import hybridai
from hybridai.cli import main
from hybridai.spiking import SigmaDelta


def _snn() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(12, 16),
        hybridai.LIF(0.85, reset="zero"),
        nn.Linear(16, 4),
        hybridai.LIF(0.85, reset="zero"),
        hybridai.SpikeCountDecoder(),
    )


FACTORY = """
import torch
from torch import nn
import hybridai


def build():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 16), hybridai.LIF(0.85, reset="zero"), nn.Linear(16, 4),
                         hybridai.LIF(0.85, reset="zero"), hybridai.SpikeCountDecoder())


def not_a_model():
    return 3


def raises():
    raise ValueError("factory broke")
"""


class Payload:
    """Unpickling this runs ``runner(*arguments)``: the payload writes the marker file."""

    def __init__(self, runner, *arguments):
        self.runner, self.arguments = runner, arguments

    def __reduce__(self):
        return self.runner, self.arguments


def _with_pickle(path, data_pkl: bytes) -> None:
    """A torch.save zip archive whose data.pkl is replaced by hand-written pickle bytes."""
    torch.save({"a": 1}, path)
    with zipfile.ZipFile(path) as archive:
        entries = {n: archive.read(n) for n in archive.namelist()}
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, data_pkl if name.endswith("/data.pkl") else content)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("deploy_report")
    marker = d / "PAYLOAD_RAN"
    model = _snn()
    x = (torch.rand(20, 6, 12, generator=torch.Generator().manual_seed(1)) < 0.4).float()
    labels = model(x).argmax(1)
    torch.save(model, d / "model.pt")
    torch.save(model.state_dict(), d / "weights.pt")
    torch.save((x, labels), d / "data.pt")
    torch.save(x, d / "x.pt")
    torch.save({"x": x, "labels": labels}, d / "dict.pt")
    np.savez(d / "data.npz", x=x.numpy(), labels=labels.numpy())
    np.savez(d / "pair.npz", x.numpy(), labels.numpy())
    torch.save(torch.rand(20, 6, 12), d / "float.pt")
    (d / "factory.py").write_text(FACTORY)
    # crafted files: unpickling any of them would write the marker
    touch = f"touch {marker}"
    torch.save(Payload(os.system, touch), d / "system.pt")
    torch.save((Payload(os.system, touch), labels), d / "system_data.pt")
    hidden = nn.Sequential(nn.Linear(2, 2))
    hidden.note = Payload(eval, f"open({str(marker)!r}, 'w')")  # an attribute of an allowed layer
    torch.save(hidden, d / "eval_in_model.pt")
    torch.save({"weight": Payload(exec, f"open({str(marker)!r}, 'w')")}, d / "exec_weights.pt")
    with open(d / "raw.pkl", "wb") as f:
        pickle.dump(Payload(os.system, touch), f)
    # a global inside an allowed module that is not one of its classes (torch.nn.modules.linear imports Tensor)
    _with_pickle(d / "imported_name.pt", b"\x80\x02ctorch.nn.modules.linear\nTensor\n)\x81.")
    _with_pickle(d / "function_name.pt", b"\x80\x02chybridai.spiking.neurons\ncheck_time_major\n)R.")
    _with_pickle(d / "posix_global.pt", b"\x80\x02cposix\nsystem\nX\x05\x00\x00\x00touch\x85R.")
    torch.save("text", d / "str.pt")
    torch.save([1, 2, 3], d / "list.pt")
    torch.save((x, "labels"), d / "str_labels.pt")
    np.savez(d / "three.npz", x.numpy(), x.numpy(), x.numpy())
    np.savez(d / "object.npz", x=np.array([{"a": 1}], dtype=object))
    torch.save(nn.Linear(3, 3).state_dict(), d / "other_weights.pt")
    (d / "text.pt").write_text("not a torch file")
    return d, marker


def _run(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue() + err.getvalue()


def _ids(table):
    return [f"{row[0]}|{row[1]}|{' '.join(row[2])}" for row in table]


# MODEL, DATA, extra arguments -> what the message names
CRAFTED = [
    ("system.pt", "data.pt", [], ["model=", "posix.system", "not loaded"]),
    ("eval_in_model.pt", "data.pt", [], ["model=", "builtins.eval"]),
    ("model.pt", "system_data.pt", [], ["data=", "posix.system", "not loaded"]),
    ("model.pt", "data.pt", ["--calibration", "system.pt"], ["calibration=", "posix.system"]),
    ("factory.py:build", "data.pt", ["--weights", "exec_weights.pt"], ["weights=", "weights_only=True"]),
    ("raw.pkl", "data.pt", [], ["model=", "not a torch.save file"]),
    ("model.pt", "raw.pkl", [], ["data=", "not a torch.save file"]),
    ("imported_name.pt", "data.pt", [], ["model=", "torch.nn.modules.linear.Tensor"]),
    ("function_name.pt", "data.pt", [], ["model=", "hybridai.spiking.neurons.check_time_major"]),
    ("posix_global.pt", "data.pt", [], ["model=", "posix.system"]),
    ("model.pt", "posix_global.pt", [], ["data=", "posix.system"]),
]


@pytest.mark.parametrize(("model", "data", "extra", "names"), CRAFTED, ids=_ids(CRAFTED))
def test_crafted_files_are_refused_and_never_run(files, model, data, extra, names):
    d, marker = files
    extra = [str(d / e) if e.endswith((".pt", ".pkl")) else e for e in extra]
    code, text = _run("deploy-report", str(d / model), str(d / data), "--backend", "nengo", *extra)
    assert code == 2 and "hybridai: error:" in text and "accepted:" in text, text
    assert all(n in text for n in names), text
    assert not marker.exists(), "a crafted file ran its payload"


BAD_INPUTS = [
    ("missing.pt", "data.pt", [], ["model=", "missing.pt", "an existing file"]),
    ("model.pt", "missing.pt", [], ["data=", "missing.pt", "an existing file"]),
    ("text.pt", "data.pt", [], ["model=", "not a torch.save file"]),
    ("weights.pt", "data.pt", [], ["model=", "OrderedDict", "FILE.py:FACTORY --weights"]),
    ("model.pt", "str.pt", [], ["data=", "it holds a str"]),
    ("model.pt", "list.pt", [], ["data=", "list of 3"]),
    ("model.pt", "str_labels.pt", [], ["data=", "labels are a str"]),
    ("model.pt", "three.npz", [], ["data=", "tuple of 3"]),
    ("model.pt", "object.npz", [], ["data=", "reading it failed"]),
    ("factory.py:not_a_model", "data.pt", [], ["model=", "holds a int, not an nn.Module"]),
    ("factory.py:raises", "data.pt", [], ["model=", "raises() raised ValueError: factory broke"]),
    ("factory.py:missing", "data.pt", [], ["model=", "no callable 'missing'"]),
    ("nofile.py:build", "data.pt", [], ["model=", "an existing Python file"]),
    ("factory.py:build", "data.pt", ["--weights", "other_weights.pt"], ["weights=", "Missing key(s)"]),
    ("factory.py:build", "data.pt", ["--weights", "data.pt"], ["weights=", "a state_dict", "tuple"]),
    ("model.pt", "data.pt", ["--backend", "nosuch"], ["'nosuch' is not registered", "Did you mean"]),
    ("model.pt", "data.pt", ["--backend", "loihi", "-o", "quirks=3"], ["quirks=3", "'nengo', 'lava'"]),
    ("model.pt", "data.pt", ["--backend", "loihi", "--energy", "bogus=1"], ["energy=", "bogus"]),
    ("model.pt", "data.pt", ["--backend", "akida"], ["model[1]='LIF'", "akida takes"]),
]


@pytest.mark.parametrize(
    ("model", "data", "extra", "names"), BAD_INPUTS, ids=[f"{b[0]}|{b[1]}|{b[2]}" for b in BAD_INPUTS]
)
def test_bad_inputs_exit_2_naming_them(files, model, data, extra, names):
    d, _ = files
    extra = [str(d / e) if e.endswith((".pt", ".npz")) else e for e in extra]
    args = [str(d / model), str(d / data)]
    if "--backend" not in extra:
        extra = [*extra, "--backend", "nengo"]
    code, text = _run("deploy-report", *args, *extra)
    assert code == 2 and "hybridai: error:" in text, text
    assert all(n in text for n in names), text


@pytest.mark.parametrize(
    ("model", "data", "extra"),
    [
        ("model.pt", "data.pt", []),
        ("model.pt", "x.pt", []),
        ("model.pt", "dict.pt", []),
        ("model.pt", "data.npz", []),
        ("model.pt", "pair.npz", []),
        ("factory.py:build", "data.pt", ["--weights", "weights.pt"]),
        ("model.pt", "data.pt", ["--backend", "loihi"]),
    ],
)
def test_accepted_files_give_the_report(files, model, data, extra):
    d, _ = files
    extra = [str(d / e) if e.endswith(".pt") else e for e in extra]
    if "--backend" not in extra:
        extra = [*extra, "--backend", "nengo"]
    code, text = _run("deploy-report", str(d / model), str(d / data), *extra)
    assert code == 0, text
    assert "prediction agreement" in text
    if data != "x.pt":  # labels given: both accuracies
        assert "accuracy, deployed" in text


def test_float_data_on_loihi_blames_data_not_calibration(files):
    d, _ = files
    code, text = _run("deploy-report", str(d / "model.pt"), str(d / "float.pt"), "--backend", "loihi")
    assert code == 2 and f"error: data={str(d / 'float.pt')!r}" in text, text
    assert "calibration=" not in text and "whole numbers" in text and "non-integer value" in text
    # a calibration file the user gave is named as such
    code, text = _run(
        "deploy-report", str(d / "model.pt"), str(d / "data.pt"), "--backend", "loihi",
        "--calibration", str(d / "float.pt"),
    )  # fmt: skip
    assert code == 2 and "error: calibration=" in text


def test_loihi2_reports_without_a_calibration_batch_and_refuses_one_given(tmp_path):
    """loihi2 quantizes from the model alone: DATA's x does not calibrate it, and a --calibration file is refused
    by name, not ignored (the route the refusal gives, no --calibration, is the first run)."""
    torch.manual_seed(0)
    model = nn.Sequential(
        SigmaDelta(threshold=0.05, scale=2**-6, input="value"), nn.Linear(6, 5, bias=False),
        SigmaDelta(threshold=0.03, scale=2**-7, features=5), nn.Linear(5, 3, bias=False),
        hybridai.SpikeCountDecoder(),
    )  # fmt: skip
    torch.save(model, tmp_path / "model.pt")
    torch.save(torch.rand(10, 4, 6, generator=torch.Generator().manual_seed(2)), tmp_path / "x.pt")
    code, text = _run("deploy-report", str(tmp_path / "model.pt"), str(tmp_path / "x.pt"), "--backend", "loihi2")
    assert code == 0 and "prediction agreement" in text, text
    code, text = _run(
        "deploy-report", str(tmp_path / "model.pt"), str(tmp_path / "x.pt"), "--backend", "loihi2",
        "--calibration", str(tmp_path / "x.pt"),
    )  # fmt: skip
    assert code == 2 and "error: calibration=" in text and "chip 'loihi2' quantizes from the model alone" in text


def test_a_saved_model_of_hybridai_layers_loads_safely_and_computes_the_same(tmp_path):
    from hybridai.cli import _load_model

    torch.manual_seed(3)
    model = nn.Sequential(
        nn.Linear(12, 8), hybridai.LIF(0.9, reset="subtract"), hybridai.CUBA(0.8, 0.9), nn.Dropout(0.1),
        nn.Linear(8, 3), hybridai.LIF(0.85, output="membrane"), hybridai.MembraneDecoder("max"),
    ).eval()  # fmt: skip
    torch.save(model, tmp_path / "m.pt")
    loaded = _load_model(str(tmp_path / "m.pt"), None)
    x = (torch.rand(10, 4, 12, generator=torch.Generator().manual_seed(2)) < 0.5).float()
    assert type(loaded[2]) is hybridai.CUBA and not loaded.training
    torch.testing.assert_close(loaded(x), model(x), rtol=0, atol=0)


DEMO = [
    (["demo", "--qubits", "6"], ["qubits=6"]),  # the three-domain demo: 2 to 5 qubits (FakeManila has 5)
    (["demo", "--task", "digits", "--qubits", "3"], ["qubits=3"]),
    (["demo", "--task", "digits", "--epochs", "0"], ["epochs=0"]),
    (["demo", "--shots", "0"], ["shots=0"]),
    (["demo", "--out", "/proc/no-such-folder"], ["out='/proc/no-such-folder'"]),
    (["demo", "--epochs", "0"], ["epochs=0"]),
    (["demo", "--batch-size", "-1"], ["batch_size=-1"]),
    (["demo", "--threads", "0"], ["threads=0"]),
    (["demo", "--seed", "-1"], ["seed=-1"]),
    (["demo", "--seed", str(2**32)], [f"seed={2**32}"]),
    (["test-backend", ""], ["backend=''"]),
    (["test-backend", "torch", "--atol=-1"], ["atol=-1.0"]),
    (["test-backend", "torch", "--atol=nan"], ["atol=nan"]),
]


@pytest.mark.parametrize(("args", "names"), DEMO, ids=[" ".join(a) for a, _ in DEMO])
def test_bad_arguments_exit_2_naming_them(args, names):
    code, text = _run(*args)
    assert code == 2 and all(n in text for n in names) and "accepted" in text, text
