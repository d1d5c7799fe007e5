"""Run netx files in Lava's fixed-point CPU models; a script for the Python that has lava-nc and lava-dl.

    python lava_netx_run.py JOBS.json

``JOBS.json``: a list of ``{"net": file, "input": .npy, "output": .npy to write}``; an input is ``[T, F]`` or maps
``[T, C, H, W]`` (integers, torch's order). Each file is loaded by ``lava.lib.dl.netx.hdf5.Network`` with its
input entering the first layer's synapse (``input_shape`` in Lava's order, ``(F,)`` or ``(W, H, C)``;
``input_message_bits=24``), fed by a ring-buffer source, read by a ring-buffer sink on the output port for T
steps, with the processes selected by the ``fixed_pt`` tag (as lava-dl's own netx tests run). The sink's integers
are saved as ``[T, ...]`` in torch's order. Imports nothing of hybridai.
"""

import json
import sys

import numpy as np
from lava.lib.dl import netx
from lava.magma.core.run_conditions import RunSteps
from lava.magma.core.run_configs import Loihi1SimCfg
from lava.proc import io


def run(net_file: str, messages: np.ndarray) -> np.ndarray:
    steps = messages.shape[0]
    lava_order = messages.transpose(tuple(range(messages.ndim))[::-1])  # [..., T] with Lava's axes (W, H, C)
    network = netx.hdf5.Network(net_config=net_file, input_shape=lava_order.shape[:-1], input_message_bits=24)
    source = io.source.RingBuffer(data=lava_order)
    sink = io.sink.RingBuffer(shape=network.out.shape, buffer=steps)
    source.s_out.connect(network.inp)
    network.out.connect(sink.a_in)
    network.run(condition=RunSteps(num_steps=steps), run_cfg=Loihi1SimCfg(select_tag="fixed_pt"))
    received = sink.data.get()
    network.stop()
    return np.asarray(received).transpose(tuple(range(received.ndim))[::-1]).astype(np.int64)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    for job in jobs:
        np.save(job["output"], run(job["net"], np.load(job["input"])))
