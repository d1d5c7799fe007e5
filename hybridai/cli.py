"""The ``hybridai`` command: backends, info, demo, test-backend, deploy-report (``--help`` on each)."""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Sequence
from importlib import metadata

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

    rows = []
    for info in backends.available():  # a broken plugin is a row with its reason, never an exception
        try:
            flags = _flags(info.capabilities) if info.capabilities is not None else ""
        except Exception as exc:  # a plugin's odd capabilities never break the listing
            flags = f"unreadable ({type(exc).__name__})"
        status = "yes" if info.available else "no"
        reason = " ".join(str(info.reason).split())
        domains = "/".join(info.domains) or "?"
        rows.append([info.name, info.contract or "?", domains, status, flags, info.source, reason])
    print(format_table(["family", "contract", "domains", "available", "capabilities", "source", "reason"], rows))
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

    from hybridai.demo import run_demo

    if args.threads < 1:
        raise invalid("threads", args.threads, "a positive int")
    torch.set_num_threads(args.threads)
    run_demo(n_qubits=args.qubits, epochs=args.epochs, batch_size=args.batch_size, seed=args.seed)
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


def _load_trusted(path: str, argument: str):
    """A whole object saved with ``torch.save`` (unpickled: only for files you made yourself)."""
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except FileNotFoundError:
        raise invalid(argument, path, "an existing file written with torch.save") from None
    except Exception as exc:
        raise invalid(
            argument, path, f"a file written with torch.save (loading failed: {type(exc).__name__})"
        ) from None


def cmd_deploy_report(args: argparse.Namespace) -> int:
    import torch

    from hybridai.neuromorphic.deploy import deploy

    model = _load_trusted(args.model, "model")
    data = _load_trusted(args.data, "data")
    x, labels = data if isinstance(data, tuple | list) and len(data) == 2 else (data, None)
    if not torch.is_tensor(x):
        raise invalid("data", type(data).__name__, "a tensor x or a tuple (x, labels) saved with torch.save")
    calibration = _load_trusted(args.calibration, "calibration") if args.calibration else x
    energy = dict(args.energy) if args.energy else None
    deployment = deploy(model, args.backend, calibration=calibration, energy=energy, **dict(args.option or []))
    print(deployment.report(x, labels))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hybridai", description="Classical, quantum and spiking layers in one PyTorch model."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    p = sub.add_parser("backends", help="list backend families with availability and reason")
    p.set_defaults(func=cmd_backends)
    p = sub.add_parser("info", help="versions of hybridai and its stack, torch devices")
    p.set_defaults(func=cmd_info)
    p = sub.add_parser("demo", help="train a hybrid classical-quantum classifier on scikit-learn's digits")
    p.add_argument("--qubits", type=int, default=6, help="qubits of the quantum layer, 4 to 8 (default 6)")
    p.add_argument("--epochs", type=int, default=25, help="training epochs (default 25)")
    p.add_argument("--batch-size", type=int, default=32, help="minibatch size (default 32)")
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
        help="deploy a saved model on a neuromorphic backend and print agreement, activity, latency and energy",
        description="Load a whole model saved with torch.save(model, MODEL) and a batch saved with "
        "torch.save((x, labels), DATA) or torch.save(x, DATA), deploy the model with hybridai.deploy and print "
        "the report. Both files are unpickled: load only files you made yourself.",
    )
    p.add_argument("model", metavar="MODEL", help="file written with torch.save(model, MODEL)")
    p.add_argument(
        "data", metavar="DATA", help="file written with torch.save((x, labels), DATA) or torch.save(x, DATA)"
    )
    p.add_argument("--backend", default="loihi", help="neuromorphic backend: loihi (default), akida, nengo")
    p.add_argument("--calibration", metavar="FILE", help="calibration batch (torch.save(x)); default: x from DATA")
    p.add_argument("-o", "--option", action="append", type=_option, metavar="KEY=VALUE",
                   help="backend option (a Python literal), repeatable: -o quirks='lava'")  # fmt: skip
    p.add_argument("--energy", action="append", type=_option, metavar="EVENT=JOULES",
                   help="joules per event, repeatable: --energy synaptic_op=2e-11 (replaces published)")  # fmt: skip
    p.set_defaults(func=cmd_deploy_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except HybridAIError as exc:
        print(f"hybridai: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
