"""The ``hybridai`` command: backends, info, demo, test-backend, deploy-report (``--help`` on each)."""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from hybridai.core.errors import HybridAIError, invalid
from hybridai.core.text_table import format_table

STACK = (
    "torch", "numpy", "pennylane", "pennylane_lightning", "qiskit", "qiskit-aer", "qiskit-ibm-runtime",
    "mitiq", "snntorch", "nengo", "akida", "scikit-learn",
)  # fmt: skip


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _flags(caps: object) -> str:
    """The capabilities a family claims, from its typed record (any contract)."""
    names = ("differentiable", "exact", "bit_exact", "shots", "noise")
    flags = [k for k in names if getattr(caps, k, False) is True]
    hardware = getattr(caps, "hardware", ())
    if hardware:
        flags.append(f"hardware {'/'.join(map(str, hardware))}")
    return ", ".join(flags)


def cmd_backends(args: argparse.Namespace) -> int:
    from hybridai import backends

    rows, infos = [], backends.available()
    for info in infos:  # a broken plugin is a row with its reason, never an exception
        try:
            flags = _flags(info.capabilities) if info.capabilities is not None else ""
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a plugin's odd capabilities (even one calling sys.exit) never break the listing
            flags = f"unreadable ({type(exc).__name__})"
        status = "yes" if info.available else "no"
        reason = " ".join(str(info.reason).split())
        domains = "/".join(info.domains) or "?"
        rows.append([info.name, info.contract or "?", domains, status, flags, info.source, reason])
    print(format_table(["family", "contract", "domains", "available", "capabilities", "source", "reason"], rows))
    for info in infos:
        if info.targets:  # 'family:target' names: the fake IBM devices of aer and ibm, PennyLane's devices
            print(f"\n{info.name}: targets ({len(info.targets)}): {', '.join(info.targets)}")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    import torch

    from hybridai import __version__

    rows = [["hybridai", __version__], ["python", platform.python_version()]]
    rows += [[p, _version(p)] for p in STACK]
    print(format_table(["package", "version"], rows))
    devices = [["cpu", f"{torch.get_num_threads()} threads"]]
    if torch.cuda.is_available():
        devices += [[f"cuda:{i}", torch.cuda.get_device_name(i)] for i in range(torch.cuda.device_count())]
    else:
        devices.append(["cuda", "not available"])
    mps = hasattr(torch.backends, "mps") and torch.backends.mps.is_available()
    devices.append(["mps", "available" if mps else "not available"])
    print()
    print(format_table(["torch device", "details"], devices))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    import torch

    from hybridai.demo import run_demo, run_hybrid_demo
    from hybridai.demo.hybrid import NOISY_ROUTES

    if args.threads < 1:
        raise invalid("threads", args.threads, "a positive int")
    torch.set_num_threads(args.threads)
    if args.task == "digits":
        run_demo(n_qubits=6 if args.qubits is None else args.qubits, epochs=25 if args.epochs is None else args.epochs,
                 batch_size=args.batch_size, seed=args.seed)  # fmt: skip
    else:
        run_hybrid_demo(n_qubits=4 if args.qubits is None else args.qubits, epochs=15 if args.epochs is None else
                        args.epochs, batch_size=args.batch_size, shots=args.shots, chip=args.chip, zne=args.zne,
                        noisy=NOISY_ROUTES[args.noisy], seed=args.seed, out=args.out)  # fmt: skip
    return 0


def _option(text: str) -> tuple[str, object]:
    """``key=value`` with a Python literal value (``6``, ``None``, ``'x'``), else the text itself."""
    import ast

    key, sep, value = text.partition("=")
    if not sep or not key.strip().isidentifier():
        raise argparse.ArgumentTypeError(f"option {text!r} is not key=value (e.g. -o shots=100)")
    try:
        return key.strip(), ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key.strip(), value


def cmd_test_backend(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from hybridai.testing import conformance_checks, run_conformance

    options = dict(args.option or [])
    total = sum(len(conformance_checks(name, options)) for name in args.backends)
    with tqdm(total=total, desc="conformance", unit="check", leave=False, file=sys.stderr) as bar:
        report = run_conformance(args.backends, options, atol=args.atol, progress=lambda r: bar.update())
    print(report.table(0 if args.full else 110))
    return 0 if report.ok else 1


# deploy-report reads files that may come from anyone: nothing in them can run code.
MODEL_CLASS_MODULES = ("torch.nn.modules.", "hybridai.spiking.", "hybridai.neuromorphic.")
MODEL_ACCEPTED = (
    "a file written with torch.save(model) whose model is built only from torch.nn layers and hybridai's "
    "spiking layers (loaded with weights_only=True), or FILE.py:FACTORY / package.module:FACTORY, Python code "
    "you choose to run that returns the model (its weights from --weights FILE, a torch.save(model.state_dict()))"
)
BATCH_ACCEPTED = (
    "a file written with torch.save(x) or torch.save((x, labels)) holding only tensors, or an .npz with arrays "
    "x (and labels), e.g. numpy.savez(FILE, x=x, labels=labels)"
)


def _globals_in(path: str, argument: str, accepted: str) -> list[str]:
    """The classes and functions a torch.save file names (read without running anything)."""
    import os

    import torch

    if not os.path.isfile(path):
        raise invalid(argument, path, f"an existing file: {accepted}")
    try:
        return list(torch.serialization.get_unsafe_globals_in_checkpoint(path))
    except Exception as exc:
        raise invalid(argument, path, f"{accepted} (this is not a torch.save file: {type(exc).__name__})") from None


def _model_class(name: str) -> type | None:
    """The allowed class a saved model names (``torch.nn.modules.linear.Linear``), or None."""
    import importlib

    from torch import nn

    from hybridai.spiking.surrogate import Surrogate

    module_name, _, attr = name.rpartition(".")
    if not module_name.startswith(MODEL_CLASS_MODULES) or not attr.isidentifier():
        return None
    try:
        obj = getattr(importlib.import_module(module_name), attr)
    except Exception:
        return None
    ours = isinstance(obj, type) and obj.__module__ == module_name
    return obj if ours and (issubclass(obj, nn.Module) or issubclass(obj, Surrogate)) else None


def _load_tensors(path: str, argument: str, accepted: str, allowed: list[type] | None = None):
    """``torch.load(path, weights_only=True)``: tensors, containers and the ``allowed`` classes only."""
    import torch

    try:
        safe: list[Callable[..., Any] | tuple[Callable[..., Any], str]] = list(allowed or [])
        with torch.serialization.safe_globals(safe):
            return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise invalid(
            argument, path, f"{accepted} (loading with weights_only=True failed: {type(exc).__name__})"
        ) from None


def _factory_spec(text: str) -> tuple[str, str] | None:
    """``("file.py" or "package.module", "factory")`` when MODEL names a factory, else None."""
    import os

    where, sep, name = text.rpartition(":")
    if not sep or not name.isidentifier() or os.path.exists(text):
        return None
    if where.endswith(".py") or all(part.isidentifier() for part in where.split(".")):
        return where, name
    return None


def _model_from_factory(where: str, name: str, text: str):
    import importlib
    import importlib.util
    import os

    try:
        if where.endswith(".py"):
            if not os.path.isfile(where):
                raise invalid("model", text, f"an existing Python file before ':{name}': {MODEL_ACCEPTED}")
            spec = importlib.util.spec_from_file_location(f"hybridai_model_{abs(hash(where))}", where)
            if spec is None or spec.loader is None:
                raise invalid(
                    "model", text, f"a Python file that importlib can load before ':{name}': {MODEL_ACCEPTED}"
                )
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except HybridAIError:
        raise
    except Exception as exc:
        raise invalid(
            "model", text, f"{MODEL_ACCEPTED} (importing {where!r} failed: {type(exc).__name__}: {exc})"
        ) from None
    factory = getattr(module, name, None)
    if not callable(factory):
        raise invalid("model", text, f"{MODEL_ACCEPTED} ({where!r} has no callable {name!r})")
    try:
        return factory()
    except HybridAIError:
        raise
    except Exception as exc:
        raise invalid("model", text, f"{MODEL_ACCEPTED} ({name}() raised {type(exc).__name__}: {exc})") from None


def _load_model(text: str, weights: str | None):
    """The model of ``deploy-report``: a safely loaded torch.save file, or a factory's model."""
    from torch import nn

    spec = _factory_spec(text)
    if spec is not None:
        model = _model_from_factory(*spec, text)
    else:
        names = _globals_in(text, "model", MODEL_ACCEPTED)
        classes = [_model_class(n) for n in names]
        refused = [n for n, c in zip(names, classes, strict=True) if c is None]
        if refused:  # never loaded: a class or function outside torch.nn and hybridai's layers could run code
            raise invalid(
                "model", text, f"{MODEL_ACCEPTED}; this file names {refused} (not loaded: loading could run code)"
            )
        model = _load_tensors(text, "model", MODEL_ACCEPTED, [c for c in classes if c is not None])
    if not isinstance(model, nn.Module):
        raise invalid(
            "model", text, f"{MODEL_ACCEPTED}; it holds a {type(model).__name__}, not an nn.Module (a state_dict "
            "alone has no architecture: give FILE.py:FACTORY --weights FILE)",
        )  # fmt: skip
    if weights is not None:
        state = _load_tensors(weights, "weights", "a file written with torch.save(model.state_dict())")
        if not isinstance(state, dict):
            raise invalid("weights", weights, f"a state_dict (a dict of tensors), not a {type(state).__name__}")
        try:
            model.load_state_dict(state)
        except Exception as exc:
            raise invalid("weights", weights, f"the state_dict of this model ({' '.join(str(exc).split())})") from None
    return model


def _load_batch(path: str, argument: str):
    """``(x, labels or None)`` from an .npz (no pickles) or a tensors-only torch.save file."""
    import numpy as np
    import torch

    if path.endswith(".npz"):
        try:
            with np.load(path, allow_pickle=False) as archive:
                arrays = {k: archive[k] for k in archive.files}
        except FileNotFoundError:
            raise invalid(argument, path, f"an existing file: {BATCH_ACCEPTED}") from None
        except Exception as exc:
            raise invalid(argument, path, f"{BATCH_ACCEPTED} (reading it failed: {type(exc).__name__})") from None
        data = arrays if "x" in arrays else tuple(arrays[k] for k in sorted(arrays))
        if isinstance(data, dict):
            data = (data["x"], data.get("labels", data.get("y")))
        data = tuple(torch.from_numpy(a) if a is not None else None for a in data)
    else:
        names = _globals_in(path, argument, BATCH_ACCEPTED)
        if names:
            raise invalid(
                argument, path, f"{BATCH_ACCEPTED}; this file names {names} (not loaded: loading could run code)"
            )
        data = _load_tensors(path, argument, BATCH_ACCEPTED)
    if isinstance(data, dict) and "x" in data:
        data = (data["x"], data.get("labels", data.get("y")))
    if torch.is_tensor(data):
        data = (data, None)
    if not (isinstance(data, tuple | list) and len(data) in (1, 2) and torch.is_tensor(data[0])):
        raise invalid(argument, path, f"{BATCH_ACCEPTED}; it holds {_describe(data)}")
    x, labels = data[0], (data[1] if len(data) == 2 else None)
    if labels is not None and not torch.is_tensor(labels):
        raise invalid(argument, path, f"{BATCH_ACCEPTED}; its labels are a {type(labels).__name__}, not a tensor")
    return x, labels


def _describe(data: object) -> str:
    if isinstance(data, tuple | list):
        return f"a {type(data).__name__} of {len(data)} ({', '.join(type(d).__name__ for d in data[:4])})"
    return f"a {type(data).__name__}"


def _zne():
    from hybridai.quantum.mitigation.zne import ZNE

    return ZNE()


def cmd_deploy_report(args: argparse.Namespace) -> int:
    from hybridai.core.errors import ConfigError, ShapeError
    from hybridai.deployment import deploy
    from hybridai.deployment.build import takes_calibration

    model = _load_model(args.model, args.weights)
    x, labels = _load_batch(args.data, "data")
    energy = dict(args.energy) if args.energy else None
    options = dict(args.option or [])
    hybrid = any(v is not None for v in (args.chip, args.quantum, args.classical, args.shots)) or args.zne
    if args.calibration:
        calibration = _load_batch(args.calibration, "calibration")[0]
    else:  # DATA's x calibrates a chip that takes a calibration batch
        calibration = x if takes_calibration(args.chip if hybrid else args.backend or "loihi", options) else None
    if args.quantum_option and not hybrid:
        raise invalid("--quantum-option", sorted(dict(args.quantum_option)), "only with --quantum (the hybrid form)")
    try:
        if hybrid:
            if args.backend is not None:
                raise invalid("--backend", args.backend, "not with --chip/--quantum/--classical/--shots/--zne")
            deployment = deploy(
                model, chip=args.chip, quantum=args.quantum, classical=args.classical, shots=args.shots,
                mitigation=_zne() if args.zne else None, calibration=calibration, energy=energy,
                chip_options=options or None, quantum_options=dict(args.quantum_option or []) or None,
            )  # fmt: skip
        else:
            deployment = deploy(model, args.backend or "loihi", calibration=calibration, energy=energy, **options)
    except (ConfigError, ShapeError) as exc:
        message = str(exc)
        if args.calibration or not message.startswith("calibration="):
            raise
        # the calibration batch is DATA's x, which the user gave as data: the error is about DATA
        raise type(exc)(
            f"data={args.data!r}: x={message.removeprefix('calibration=')} (x also calibrates the chip when "
            "--calibration is not given)"
        ) from None
    print(deployment.report(x, labels))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hybridai", description="Classical, quantum and spiking layers in one PyTorch model."
    )
    from hybridai import __version__

    parser.add_argument("--version", action="version", version=f"hybridai {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    p = sub.add_parser("backends", help="list backend families with availability and reason")
    p.set_defaults(func=cmd_backends)
    p = sub.add_parser("info", help="versions of hybridai and its stack, torch devices")
    p.set_defaults(func=cmd_info)
    p = sub.add_parser(
        "demo",
        help="train ONE model with a neuromorphic front end, classical and quantum layers on event-camera data, "
        "deploy it on an emulated chip (Loihi 2 by default) and a noisy fake IBM device (with and without ZNE); "
        "--task digits: the digits demo",
    )
    p.add_argument("--task", choices=("events", "digits"), default="events",
                   help="events: the three-domain demo (default); digits: classical + quantum on digits")  # fmt: skip
    p.add_argument("--qubits", type=int, default=None,
                   help="qubits of the quantum layer (events 2-5, default 4; digits 4-8, default 6)")  # fmt: skip
    p.add_argument("--epochs", type=int, default=None, help="training epochs (events 15, digits 25)")
    p.add_argument("--batch-size", type=int, default=32, help="minibatch size (default 32)")
    p.add_argument("--chip", choices=("loihi2", "loihi", "akida", "nengo"), default="loihi2",
                   help="events: the chip and its front end: loihi2 (sigma-delta, default), loihi or nengo (LIF), "
                   "akida (a CNN on frames)")  # fmt: skip
    p.add_argument("--noisy", choices=("density", "aer"), default="density",
                   help="events: what simulates the noisy fake IBM device (FakeManila's noise model): density "
                   "(hybridai's density matrices, default) or aer (Qiskit Aer)")  # fmt: skip
    p.add_argument("--shots", type=int, default=1000, help="shots on the noisy device, events (default 1000)")
    p.add_argument("--no-zne", dest="zne", action="store_false", help="events: skip the ZNE placement")
    p.add_argument("--out", type=Path, default=Path("."), help="folder for hybrid_demo.png, events (created first)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1: fastest for these small models)")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser(
        "test-backend",
        help="run the backend conformance suite and print a pass/fail table (exit 1 on failure)",
        description="Run hybridai's backend conformance suite (hybridai.testing) on each BACKEND and print a "
        "pass/fail table; the exit status is 1 when a check fails.",
    )
    p.add_argument(
        "backends", nargs="+", metavar="BACKEND", help="'family' or 'family:target', e.g. pennylane:lightning.qubit"
    )
    p.add_argument("-o", "--option", action="append", type=_option, metavar="KEY=VALUE",
                   help="backend option (a Python literal), repeatable: -o shots=100 -o seed=3")  # fmt: skip
    p.add_argument("--atol", type=float, default=None, help="tolerance of the exact-value and gradient checks")
    p.add_argument("--full", action="store_true", help="print each check's detail in full")
    p.set_defaults(func=cmd_test_backend)
    p = sub.add_parser(
        "deploy-report",
        help="deploy a saved model on a chip, or each domain on its backend, and print the report",
        description="Deploy MODEL with hybridai.deploy, run it on the batch in DATA and print the report: on one "
        "chip (--backend), or segment by segment with --chip/--quantum/--classical (a hybrid model). Files "
        "are read so that nothing in them can run code (torch.load with weights_only=True, numpy without "
        "pickles): a saved model may use torch.nn layers and hybridai's spiking layers only; any other model "
        "comes from Python code you name (FILE.py:FACTORY) with its state_dict in --weights.",
    )
    p.add_argument(
        "model", metavar="MODEL",
        help="torch.save(model, MODEL) of torch.nn/hybridai layers, or FILE.py:FACTORY or package.module:FACTORY",
    )  # fmt: skip
    p.add_argument(
        "data", metavar="DATA", help="torch.save((x, labels), DATA) or torch.save(x, DATA) (tensors only), or an "
        ".npz with arrays x and labels",
    )  # fmt: skip
    p.add_argument("--weights", metavar="FILE", help="torch.save(model.state_dict(), FILE), loaded into the model")
    p.add_argument("--backend", help="one chip for the whole model: loihi (default), akida, nengo")
    p.add_argument("--chip", help="hybrid form: the chip (or torch[:device]) for the spiking segments")
    p.add_argument("--quantum", help="hybrid form: the backend of the quantum segments, e.g. aer:fake_manila")
    p.add_argument("--classical", help="hybrid form: the torch device of the classical segments (default torch)")
    p.add_argument("--shots", type=int, help="hybrid form: shots per circuit of the quantum segments")
    p.add_argument("--zne", action="store_true", help="hybrid form: zero-noise extrapolation (hybridai.ZNE())")
    p.add_argument("--quantum-option", action="append", type=_option, metavar="KEY=VALUE",
                   help="hybrid form: quantum backend option, repeatable: --quantum-option seed=3")  # fmt: skip
    p.add_argument(
        "--calibration",
        metavar="FILE",
        help="calibration batch, in DATA's formats; default: x from DATA (for a chip that takes one)",
    )
    p.add_argument("-o", "--option", action="append", type=_option, metavar="KEY=VALUE",
                   help="chip option (a Python literal), repeatable: -o quirks='lava'")  # fmt: skip
    p.add_argument("--energy", action="append", type=_option, metavar="EVENT=JOULES",
                   help="joules per event, repeatable: --energy synaptic_op=2e-11 (replaces published)")  # fmt: skip
    p.set_defaults(func=cmd_deploy_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except HybridAIError as exc:
        from hybridai.core.redaction import redact

        print(f"hybridai: error: {redact(exc)}", file=sys.stderr)  # never a token, whoever wrote the message
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
