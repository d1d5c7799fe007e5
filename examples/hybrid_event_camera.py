"""One model, three kinds of hardware, with the knobs a researcher turns: `hybridai demo` with options.

Event-camera recordings -> a neuromorphic front end -> Tanh -> QuantumLayer -> Linear, trained end to end
on the CPU, then deployed: the front end on a chip (`--chip loihi2`: a sigma-delta network, trained through
`loihi2.fake_quantize`, the default; `loihi` or `nengo`: a LIF layer; `akida`: a small CNN on the events summed
into frames), the circuit exact, on a noisy device (default `density:fake_manila`; `--quantum aer:fake_manila`,
`ibm:fake_manila`, any quantum backend) with `--shots`, and with zero-noise extrapolation (`--no-zne` to skip
it); the rest on torch. Baselines: a classical layer in place of the circuit, a dense float front end in place
of the chip's. Prints the tables (accuracy per placement with a legend, the chip's cost, per-segment costs) and saves
DIR/hybrid_demo.png. Measured on 2 CPU cores: about 20 s with the defaults
(`time python examples/hybrid_event_camera.py`).

    python examples/hybrid_event_camera.py [--chip loihi|akida|nengo] [--quantum ibm:fake_manila]
                                           [--shots 4000] [--no-zne] [--qubits 5] [--epochs 30]
                                           [--samples 600] [--out DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from hybridai.demo.event_models import FRONT_ENDS
from hybridai.demo.hybrid import NOISY_DEVICE, run_hybrid_demo


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    chips = "loihi2 (sigma-delta, default), loihi or nengo (LIF), akida (CNN)"
    parser.add_argument("--chip", default="loihi2", choices=sorted(FRONT_ENDS), help=f"the front end's chip: {chips}")
    parser.add_argument("--quantum", default=NOISY_DEVICE, help=f"noisy quantum backend (default {NOISY_DEVICE})")
    parser.add_argument("--shots", type=int, default=1000, help="shots per circuit on the noisy backend (1000)")
    parser.add_argument("--no-zne", dest="zne", action="store_false", help="skip the ZNE placement")
    parser.add_argument("--qubits", type=int, default=4, help="qubits of the circuit, 2 to 5 (default 4)")
    parser.add_argument("--epochs", type=int, default=15, help="training epochs (default 15)")
    parser.add_argument("--samples", type=int, default=300, help="recordings, 2/3 train, 1/3 test (default 300)")
    parser.add_argument("--steps", type=int, default=8, help="time steps per recording (default 8)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for hybrid_demo.png (created first)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # these models are small: one thread is fastest
    return run_hybrid_demo(n_qubits=args.qubits, epochs=args.epochs, samples=args.samples, steps=args.steps,
                           shots=args.shots, chip=args.chip, noisy=args.quantum, zne=args.zne, seed=args.seed,
                           out=args.out)  # fmt: skip


if __name__ == "__main__":
    main()
