"""A transpiled circuit with its noise, compiled once per structure into blocks of Pauli transfer matrices.

Only the qubits a gate or an observable touches are simulated (a 27-qubit device's idle qubits stay |0> without
noise, as in Aer). Every gate is followed by its noise channel (``noise``); then the circuit is cut into blocks:

- each multi-qubit gate starts a block on its qubits (sorted); the next multi-qubit gates on the same qubits join
  it while nothing else touches those qubits in between;
- single-qubit gates wait on their qubit as a *chain* and join the next block on that qubit (as a Kronecker
  product of the chains of its qubits), or the last one when no block follows; a qubit no block touches is a
  one-qubit block of its own.

Consecutive constant factors (gate and noise, gate after gate) are multiplied here, once. What is left for each
call: the parametric factors (``channels.Expansion`` of each angle, all evaluated together by ``simulate``), a few
small products per block, and one application of each block to the state. Constant tensors are kept per torch
device and dtype (``plan``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hybridai.core.errors import ConfigError
from hybridai.quantum.density.channels import LETTER_CODES, embed, reorder
from hybridai.quantum.density.gates import check_simulated, constant_ptm, parametric
from hybridai.quantum.density.noise import Noise
from hybridai.quantum.density.pennylane_channels import kraus_channel_ptm, reordered
from hybridai.quantum.density.plan import Block, Factor, Param, Plan, Readout
from hybridai.quantum.qiskit_frontend.channels import ChannelSpec
from hybridai.quantum.qiskit_frontend.conversion import CHANNEL_LABEL


def used_qubits(circuit: Any, observables: list[Any], letters: dict[int, str] | None = None) -> tuple[int, ...]:
    """Physical qubits a gate (not a barrier or measurement) or an observable (or a measured letter) touches."""
    used = {circuit.find_bit(q).index for i in circuit.data if i.operation.name not in ("barrier", "measure")
            for q in i.qubits}  # fmt: skip
    for obs in observables:
        for label in obs.paulis.to_labels():
            used |= {len(label) - 1 - i for i, c in enumerate(label) if c != "I"}
    used |= set(letters or ())
    return tuple(sorted(used))


def compile_circuit(
    circuit: Any,
    noise: Noise,
    physical: tuple[int, ...],
    channels: list[ChannelSpec] | tuple = (),
    varying: tuple[bool, ...] | None = None,
) -> Plan:
    """The blocks of ``circuit`` with ``noise`` (module docstring) on the simulated ``physical`` qubits; its
    ``channels`` (the converted circuit's PennyLane channels) where their place holders are. ``varying[i]``: whether
    ``theta[i]`` differs between rows (None: every one may); what reads none of those is computed once per call,
    not once per row."""
    plan = Plan(physical)
    sim = {q: s for s, q in enumerate(physical)}
    chains: dict[int, list[Factor]] = {}
    last: dict[int, int] = {}  # simulated qubit -> index of the last block on it
    measured: set[int] = set()
    for position, instruction in enumerate(circuit.data):
        op = instruction.operation
        qubits = tuple(circuit.find_bit(q).index for q in instruction.qubits)
        if op.name == "barrier":
            noise.ptm("barrier", qubits)  # refused if the noise model puts an error there
            continue
        if op.name == "measure":  # its error acts before the read (as in Aer): one more factor on the qubit
            error = noise.ptm(getattr(op, "label", None) or "measure", qubits)
            if error is not None and qubits[0] in sim:
                _push(plan, chains.setdefault(sim[qubits[0]], []), plan.constant(error))
            measured.update(qubits)
            continue
        if not qubits:  # a gate on no qubits is a global phase: no effect on a density matrix
            continue
        if measured & set(qubits):
            raise ConfigError(f"circuit has {op.name!r} on qubits {list(qubits)} after their measurement; accepted: "
                              "measurements at the end")  # fmt: skip
        label = getattr(op, "label", None) or ""
        if op.name == "kraus" and label.startswith(CHANNEL_LABEL):
            factors = [_channel(plan, channels[int(label[len(CHANNEL_LABEL) :])], qubits, sim)]
        else:
            check_simulated(op, qubits, len(instruction.clbits))
            factors = _factors(plan, op, qubits, sim, noise, f"{op.name} (instruction {position})")
        targets = tuple(sorted(sim[q] for q in qubits))
        if len(targets) == 1:
            chain = chains.setdefault(targets[0], [])
            for factor in factors:
                _push(plan, chain, factor)
            continue
        j = last.get(targets[0])
        if j is None or plan.blocks[j].qubits != targets or any(last.get(q) != j for q in targets):
            plan.blocks.append(Block(targets))
            j = len(plan.blocks) - 1
        block = plan.blocks[j]
        _add_chains(plan, block, {q: chains.pop(q) for q in targets if chains.get(q)})
        for factor in factors:
            _push(plan, block.pieces, factor)
        for q in targets:
            last[q] = j
    for q, chain in sorted(chains.items()):
        if not chain:
            continue
        if q in last:
            _add_chains(plan, plan.blocks[last[q]], {q: chain})
        else:
            plan.blocks.append(Block((q,), list(chain)))
    _mark_varying(plan, varying)
    _group(plan)
    _tables(plan)
    return plan


def _mark_varying(plan: Plan, varying: tuple[bool, ...] | None) -> None:
    """Each parametric factor's ``varying``: it reads a parameter that differs between rows."""
    if varying is None:
        return
    for param in plan.params:
        if param.channel is not None:
            param.varying = any(varying[i] for i in param.channel.rates)
        else:
            assert param.angle is not None
            param.varying = any(varying[int(name[6:-1])] for name in param.angle.names)


def _factors(plan: Plan, op: Any, qubits: tuple[int, ...], sim: dict[int, int], noise: Noise, where: str) -> list:
    """The gate's factors on its simulated qubits (sorted): the gate (constant or parametric), then its noise."""
    key = getattr(op, "label", None) or op.name
    order = _order([sim[q] for q in reversed(qubits)])  # Qiskit's matrices are big-endian over reversed(qubits)
    error = noise.ptm(key, qubits)
    found = parametric(op, qubits, where)
    if found is None:
        gate = constant_ptm(op, qubits)
        matrix = gate if error is None else error @ gate
        return [plan.constant(reorder(matrix, order))]
    angle, expansion, form = found
    plan.params.append(Param(angle, expansion.reordered(order), form))
    factors: list[Factor] = [("p", len(plan.params) - 1)]
    if error is not None:
        factors.append(plan.constant(reorder(error, order)))
    return factors


def _channel(plan: Plan, spec: ChannelSpec, qubits: tuple[int, ...], sim: dict[int, int]) -> Factor:
    """A PennyLane channel's factor on its simulated qubits (sorted): constant (Kraus matrices), or made from its
    rates in each call."""
    spec = reordered(spec, _order([sim[q] for q in qubits]))  # a channel is big-endian over its qubits as given
    if spec.kraus is not None:
        return plan.constant(kraus_channel_ptm(spec))
    plan.params.append(Param(None, None, None, spec))
    return ("p", len(plan.params) - 1)


def _order(simulated: list[int]) -> tuple[int, ...]:
    """The permutation that sorts ``simulated`` (as ``channels.reorder`` takes it)."""
    return tuple(simulated.index(s) for s in sorted(simulated))


def _push(plan: Plan, pieces: list[Factor], factor: Factor) -> None:
    """Append ``factor``, multiplied into the previous piece when both are constant."""
    if factor[0] == "c" and pieces and pieces[-1][0] == "c":
        product = plan.constants[factor[1]] @ plan.constants[pieces[-1][1]]
        plan.constants[pieces[-1][1]] = product
        return
    pieces.append(factor)


def _add_chains(plan: Plan, block: Block, chains: dict[int, list[Factor]]) -> None:
    """The Kronecker product of single-qubit ``chains`` (simulated qubit -> factors) as the block's next piece;
    constant when every chain is one constant."""
    if not chains:
        return
    k = len(block.qubits)
    positions = {q: block.qubits.index(q) for q in chains}
    if all(len(c) == 1 and c[0][0] == "c" for c in chains.values()):
        matrix = np.eye(4**k)
        for q, chain in chains.items():
            matrix = embed(plan.constants[chain[0][1]], (positions[q],), k) @ matrix
        _push(plan, block.pieces, plan.constant(matrix))
        return
    block.pieces.append(("k", tuple((positions[q], tuple(c)) for q, c in sorted(chains.items()))))


def _group(plan: Plan) -> None:
    """Parametric gates of one matrix size and one set of frequencies are evaluated together."""
    index: dict[tuple, int] = {}
    for i, param in enumerate(plan.params):
        if param.channel is not None:
            key: tuple = (4**param.channel.k, None, param.varying)
        else:
            assert param.expansion is not None
            key = (param.expansion.constant.shape[0], param.expansion.frequencies, param.varying)
        if key not in index:
            index[key] = len(plan.groups)
            plan.groups.append((key[0], key[1], []))
            plan.group_varying.append(param.varying)
        param.group = index[key]
        param.slot = len(plan.groups[param.group][2])
        plan.groups[param.group][2].append(i)


def _tables(plan: Plan) -> None:
    """Every chain numbered, its factors as indices into the chain pool (the identity, the chains' constants, then
    the one-qubit parametric matrices group by group); Kronecker pieces as rows of chain indices per block size."""
    tables: dict[int, list[list[int]]] = {}
    for block in plan.blocks:
        if len(block.qubits) == 1 and not all(kind == "c" for kind, _ in block.pieces):
            block.pieces = [("h", _chain(plan, tuple(block.pieces)))]
            continue
        for n, (kind, what) in enumerate(block.pieces):
            if kind == "k":
                k = len(block.qubits)
                row = [-1] * k
                for position, chain in what:
                    row[position] = _chain(plan, chain)
                tables.setdefault(k, []).append(row)
                block.pieces[n] = ("k", (k, len(tables[k]) - 1))
    plan.kron_tables = {k: np.array(rows, dtype=np.int64).reshape(len(rows), k) for k, rows in tables.items()}
    plan.chain_varying = np.array([any(kind == "p" and plan.params[i].varying for kind, i in chain)
                                   for chain in plan.chains], dtype=bool)  # fmt: skip
    plan.kron_varying = {k: np.array([any(plan.chain_varying[c] for c in row if c >= 0) for row in table], dtype=bool)
                         for k, table in plan.kron_tables.items()}  # fmt: skip
    constants = sorted({i for chain in plan.chains for kind, i in chain if kind == "c"})
    plan.chain_constants = constants
    offsets, start = {}, 1 + len(constants)
    for g, (d, _, members) in enumerate(plan.groups):
        if d == 4:
            offsets[g] = start
            start += len(members)
    where = {i: 1 + n for n, i in enumerate(constants)}
    length = max((len(c) for c in plan.chains), default=0)
    table = np.zeros((length, len(plan.chains)), dtype=np.int64)  # 0: the identity (padding)
    for c, chain in enumerate(plan.chains):
        for f, (kind, i) in enumerate(chain):
            param = plan.params[i] if kind == "p" else None
            table[f, c] = where[i] if param is None else offsets[param.group] + param.slot
    plan.chain_table = table


def _chain(plan: Plan, chain: tuple[Factor, ...]) -> int:
    plan.chains.append(chain)
    return len(plan.chains) - 1


def exact_readout(plan: Plan, observables: list[Any]) -> Readout:
    """The flat state indices of every Pauli term of ``observables`` and their weights ``[T, R]``."""
    sim = {q: s for s, q in enumerate(plan.physical)}
    terms: dict[int, int] = {}
    rows: list[tuple[int, int, float]] = []
    for r, obs in enumerate(observables):
        for label, coeff in zip(obs.paulis.to_labels(), obs.coeffs, strict=True):
            flat = 0
            for i, letter in enumerate(label):
                if letter != "I":
                    flat += LETTER_CODES[letter] * 4 ** (plan.m - 1 - sim[len(label) - 1 - i])
            t = terms.setdefault(flat, len(terms))
            rows.append((t, r, float(np.real(coeff))))
    weights = np.zeros((len(terms), len(observables)))
    for t, r, c in rows:
        weights[t, r] += c
    return Readout(np.array(list(terms), dtype=np.int64), weights)
