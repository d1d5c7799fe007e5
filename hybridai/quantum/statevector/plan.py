"""The execution plan of hybridai's batched torch statevector executor: how one circuit structure runs.

A tape becomes steps (``gates.py``); the *structure* of the steps (kinds, wires, which
are broadcast) is planned once and cached: leading single-qubit steps (embeddings, a first
rotation layer) become per-wire columns, and the product state one gathered product per
group of <= 4 wires; runs of constant gates (X, CNOT, SWAP, CZ, S, ...)
and diagonal gates (RZ, CRZ, IsingZZ, ...) merge into ONE permutation and ONE phase
vector; a run of steps that does not depend on the batch (the trainable ansatz) becomes
one unitary applied to the whole batch as a matrix product when 2^n is small against the
batch; everything else is applied as small matrix products on ``[B, ..., 2, ...]`` views.
A last run of constant gates (an entangler ring) before measurements of Z-words only is not
applied: it permutes the probabilities, so it goes into the measured Z-vectors (``Plan.tail``).
Everything is plain torch, so autograd gives exact gradients on CPU and CUDA.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from hybridai.quantum.statevector.gates import Step
from hybridai.quantum.statevector.primitives import (
    KRON_CHUNK,
    apply_matrix,
    bit_positions,
    gather_product,
    kron,
    outer_rows,
    permute,
    permute_rows,
    replace_bits,
)

# wires per gathered product of a product state (then Kronecker products of the groups). 4 by measurement on a
# 2-core AMD EPYC, 8 qubits, batch 256, complex128: one [B, 256, 8] gather and product, whose backward divides
# and copies [B, 256, 8] complex tensors, made most of the step (38.7 ms); two groups of 4: 12.1 ms
PRODUCT_GROUP = 4

StateFn = Callable[[torch.Tensor, list[Step]], torch.Tensor]


_ONE_ZERO = torch.tensor([1.0, 0.0])  # identity entries on and off the diagonal; the amplitudes of |0>


def _factor_index(matrices: list[int | None], constants: int, width: int | None = None) -> np.ndarray:
    """``[2^c, 2^c, width]`` indices into flattened ``[k, 2, 2]`` matrices followed by the constants (1, 0) at
    ``constants`` (= 4k), for the Kronecker product of the c = len(matrices) wires, wire 0 most significant: per
    basis pair (i, j) and wire u, the entry ``M[bit_u(i), bit_u(j)]`` of matrix ``matrices[u]``, or the
    identity's entry (1 where the bits agree, 0 where not) where it is None; extra columns up to ``width`` hold
    the constant 1."""
    c = len(matrices)
    index = np.arange(2**c)
    out = np.full((2**c, 2**c, width or c), constants, dtype=np.int64)
    for u, j in enumerate(matrices):
        row = (index[:, None] >> (c - 1 - u)) & 1
        col = (index[None, :] >> (c - 1 - u)) & 1
        out[:, :, u] = 4 * j + 2 * row + col if j is not None else constants + (row != col)
    return out


def _layer_matrices(steps: list[Step]) -> torch.Tensor:
    """The single-qubit matrices of consecutive layers ``[L, k, 2, 2]``: one slice of the template's own tensor
    when the steps are its layers in order (no per-layer select and stack, forward or backward), else stacked."""
    first = steps[0].layer
    if first is not None and all(
        s.layer is not None and s.layer[0] is first[0] and s.layer[1] == first[1] + j for j, s in enumerate(steps)
    ):
        return first[0][first[1] : first[1] + len(steps)]
    return torch.stack([s.tensor for s in steps])


class Plan:
    """The cached execution plan of one circuit structure."""

    def __init__(self, keys: list[tuple], n: int, fuse: bool, device: torch.device, cdtype: torch.dtype) -> None:
        self.n, self.device, self.cdtype = n, device, cdtype
        self._wires = tuple(range(n))
        # product states: wires in groups of <= PRODUCT_GROUP; per group, the flat (wire, bit) index of every
        # basis state's factor, [2^k, k]
        self._groups = []
        size = math.ceil(n / math.ceil(n / PRODUCT_GROUP)) if n else 1
        for start in range(0, n, size):
            k = min(size, n - start)
            index, wires = np.arange(2**k)[:, None], np.arange(k)[None, :]
            self._groups.append((start, torch.as_tensor(2 * wires + ((index >> (k - 1 - wires)) & 1), device=device)))
        start = initial_steps(keys)
        if keys and keys[0][0] == "init":
            self.init: Callable[[list[Step], int], torch.Tensor] = self._init_given
        else:
            prefix = list(range(start))
            self.init = lambda steps, b: self._init_product(steps, prefix, b)
        self.funcs: list[StateFn] = []
        self.fused_runs = 0
        i = start
        while i < len(keys):
            j = i
            while j < len(keys) and keys[j][2] == keys[i][2]:
                j += 1
            run = list(range(i, j))
            if fuse and not keys[i][2] and len(run) >= 2:
                self.funcs.append(self._fused(keys, run))
                self.fused_runs += 1
            else:
                self.funcs.extend(self._compile(keys, run))
                if j == len(keys):
                    self._find_tail(keys, run)
            i = j

    # a trailing run of constant permutations/phases (the last entangler ring): (its inverse permutation, or None
    # for phases alone); probabilities after it are those before it permuted, so diagonal measurements take it
    # into their vectors (``run_to_tail``) instead of the state going through it, forward and backward
    tail: tuple[torch.Tensor | None] | None = None

    def _find_tail(self, keys: list[tuple], run: list[int]) -> None:
        """Set ``tail`` when the last function ``_compile`` made of ``run`` (the plan's last) is its trailing chain
        of constant monomial steps (``_monomial``: one chain, as nothing follows it), with no diagonal step."""
        k = len(run)
        while k and keys[run[k - 1]][0] in ("mono", "diag"):
            k -= 1
        if k == len(run) or any(keys[i][0] != "mono" for i in run[k:]):
            return
        _, inverse, _, _ = self._chain(keys, run[k:])  # phases of constant gates have modulus 1
        self.tail = (inverse,)

    @staticmethod
    def _product_friendly(key: tuple) -> bool:
        kind, wires = key[0], key[1]
        return kind == "sq" or (kind in ("dense", "diag", "mono") and len(wires) == 1)

    # -- initial state ---------------------------------------------------------------------

    def _init_given(self, steps: list[Step], b: int) -> torch.Tensor:
        state = steps[0].tensor
        return state if state.dim() == 2 else state.expand(b, -1)

    def _init_product(self, steps: list[Step], prefix: list[int], b: int) -> torch.Tensor:
        if all(steps[i].kind == "sq" for i in prefix):
            return self._init_columns(steps, prefix, b)
        vectors: dict[int, torch.Tensor] = {}
        for i in prefix:
            step = steps[i]
            if step.kind == "sq":
                for j, w in enumerate(step.wires):
                    m = step.tensor[..., j, :, :]
                    vectors[w] = m[..., :, 0] if w not in vectors else (m @ vectors[w].unsqueeze(-1)).squeeze(-1)
                continue
            (w,) = step.wires
            v = vectors.get(w)
            if v is None:
                v = torch.tensor([1, 0], dtype=self.cdtype, device=self.device)
            if step.kind == "dense":
                v = (step.tensor @ v.unsqueeze(-1)).squeeze(-1)
            elif step.kind == "diag":
                v = step.tensor * v
            else:
                perm, phases = step.const
                v = torch.tensor(phases, dtype=self.cdtype, device=self.device) * v[..., list(perm)]
            vectors[w] = v
        zero = torch.tensor([[1, 0]], dtype=self.cdtype, device=self.device)
        rows = [vectors.get(w, zero).reshape(-1, 2) for w in range(self.n)]
        state = rows[0]
        for v in rows[1:]:
            state = (state.unsqueeze(-1) * v.unsqueeze(-2)).reshape(max(state.shape[0], v.shape[0]), -1)
        return state.expand(b, -1) if state.shape[0] == 1 else state

    def _init_columns(self, steps: list[Step], prefix: list[int], b: int) -> torch.Tensor:
        """The product state of single-qubit layers (embeddings, a first rotation layer): every wire's state as
        ``[..., n, 2]`` columns, then per group of <= ``PRODUCT_GROUP`` wires one gathered product, and the groups'
        Kronecker product."""
        n, columns = self.n, None
        for i in prefix:
            step = steps[i]
            mats, everywhere = step.tensor, step.wires == self._wires
            if columns is None and everywhere:
                columns = mats[..., 0]
                continue
            if columns is None:
                columns = self._zero_columns()
            if everywhere:
                columns = (mats * columns.unsqueeze(-2)).sum(-1)  # per wire: matrix times column
                continue
            wires = torch.as_tensor(step.wires, device=mats.device)
            lead = torch.broadcast_shapes(columns.shape[:-2], mats.shape[:-3])
            columns = columns.expand(*lead, n, 2)
            updated = (mats * columns.index_select(-2, wires).unsqueeze(-2)).sum(-1)
            columns = columns.index_copy(-2, wires, updated.expand(*lead, len(step.wires), 2))
        columns = (self._zero_columns() if columns is None else columns).reshape(-1, 2 * n)
        state, *parts = [
            gather_product(columns[:, 2 * start : 2 * start + 2 * bits.shape[1]], bits) for start, bits in self._groups
        ]
        for part in parts:
            state = outer_rows(state, part)
        return state.expand(b, -1) if state.shape[0] == 1 else state

    def _zero_columns(self) -> torch.Tensor:
        return _ONE_ZERO.to(self.cdtype).to(self.device).expand(self.n, 2)  # every wire in |0>

    # -- evolution -------------------------------------------------------------------------

    def _compile(self, keys: list[tuple], run: list[int]) -> list[StateFn]:
        funcs: list[StateFn] = []
        chain: list[int] = []
        for i in run:
            if keys[i][0] in ("mono", "diag"):
                chain.append(i)
                continue
            before = None
            if chain:
                perm, inverse, const, gathers = self._chain(keys, chain)
                if self._rotates(keys[i]) and const is None and not gathers and perm is not None:
                    before = (perm, inverse)  # gathered in the same pass as the layer's transposed copy
                else:
                    funcs.append(self._monomial(keys, chain))
                chain = []
            if keys[i][0] == "sq":
                funcs.append(
                    self._rotating_layer(keys[i][1], i, before) if self._rotates(keys[i]) else self._sq(keys[i], i)
                )
            else:
                funcs.append(self._dense(keys[i][1], i))
        if chain:
            funcs.append(self._monomial(keys, chain))
        return funcs

    def _rotates(self, key: tuple) -> bool:
        """A constant single-qubit layer on at least half the wires runs as a rotating GEMM cycle."""
        return key[0] == "sq" and not key[2] and 2 * len(key[1]) >= self.n

    def _sq(self, key: tuple, i: int) -> StateFn:
        wires = key[1]
        n = self.n
        chunks = [
            (tuple(range(c, min(c + KRON_CHUNK, len(wires)))), wires[c : c + KRON_CHUNK])
            for c in range(0, len(wires), KRON_CHUNK)
        ]

        def apply(psi: torch.Tensor, steps: list[Step]) -> torch.Tensor:
            mats = steps[i].tensor
            for idx, ws in chunks:
                psi = apply_matrix(psi, n, ws, kron([mats[..., j, :, :] for j in idx]))
            return psi

        return apply

    def _rotating_layer(self, wires: tuple[int, ...], i: int, before: tuple | None = None) -> StateFn:
        """Single-qubit gates on (most) wires as a cycle of skinny GEMMs, with no copies between.

        On a state laid out as ``[q0..q_{n-1}, b]`` (one transposed copy), ``X.T @ M.T`` with
        ``X = view(2^c, -1)`` applies ``M`` to the leading c qubits AND moves them last; after
        a full cycle the layout is ``[b, q0..q_{n-1}]`` again. Wires without a gate get identity.
        ``before``: a basis permutation (CNOT ring, ...) applied in the same pass as the copy.
        """
        n = self.n
        position = {w: j for j, w in enumerate(wires)}
        sizes = [KRON_CHUNK] * (n // KRON_CHUNK) + ([n % KRON_CHUNK] if n % KRON_CHUNK else [])
        # every chunk's Kronecker product from ONE gathered product of the layer's entries (and 1, 0)
        chunks: list[tuple[int, int]] = []  # (offset of its 4^c entries, 2^c)
        parts: list[np.ndarray] = []
        start = 0
        for size in sizes:
            parts.append(_factor_index([position.get(a) for a in range(start, start + size)], 4 * len(wires), sizes[0]))
            chunks.append((sum(4**c for c in sizes[: len(chunks)]), 2**size))
            start += size
        index = torch.as_tensor(np.concatenate([p.reshape(-1, sizes[0]) for p in parts]), device=self.device)

        def apply(psi: torch.Tensor, steps: list[Step]) -> torch.Tensor:
            mats = steps[i].tensor
            entries = gather_product(torch.cat([mats.reshape(-1), _ONE_ZERO.to(mats)]), index)
            b = psi.shape[0]
            x = psi.T if before is None else permute_rows(psi, *before)
            for offset, dim in chunks:
                m = entries[offset : offset + dim * dim].view(dim, dim)
                x = x.reshape(dim, -1).T @ m.T
            return x.reshape(b, -1)

        return apply

    def _dense(self, wires: tuple[int, ...], i: int) -> StateFn:
        n = self.n
        return lambda psi, steps: apply_matrix(psi, n, wires, steps[i].tensor)

    def _monomial(self, keys: list[tuple], chain: list[int]) -> StateFn:
        """A run of permutation/phase gates and diagonal gates as one gather and one product."""
        perm_t, inverse_t, const_t, gathers = self._chain(keys, chain)

        def apply(psi: torch.Tensor, steps: list[Step]) -> torch.Tensor:
            if perm_t is not None:
                psi = permute(psi, perm_t, inverse_t)
            phase = const_t
            for j, idx in gathers:
                e = steps[j].tensor[..., idx]
                phase = e if phase is None else phase * e
            return psi if phase is None else psi * phase

        return apply

    def _chain(self, keys: list[tuple], chain: list[int]) -> tuple:
        """(permutation, its inverse, constant phases, [(step, gather index)]) of a monomial run."""
        n = self.n
        perm = np.arange(2**n, dtype=np.int64)
        const = np.ones(2**n, dtype=np.complex128)
        diags: list[tuple[int, np.ndarray]] = []
        for i in chain:
            kind, wires = keys[i][0], keys[i][1]
            local = bit_positions(n, wires)
            if kind == "diag":
                diags.append((i, local))
                continue
            local_perm, local_phase = (np.asarray(a) for a in keys[i][3])
            p = replace_bits(n, wires, local_perm[local])
            d = local_phase[local]
            perm, const = perm[p], d * const[p]
            diags = [(j, idx[p]) for j, idx in diags]
        identity = bool(np.all(perm == np.arange(2**n)))
        perm_t = None if identity else torch.as_tensor(perm, device=self.device)
        inverse_t = None if identity else torch.as_tensor(np.argsort(perm), device=self.device)
        const_t = None if np.allclose(const, 1) else torch.as_tensor(const, device=self.device).to(self.cdtype)
        gathers = [(j, torch.as_tensor(idx, device=self.device)) for j, idx in diags]
        return perm_t, inverse_t, const_t, gathers

    def _fused(self, keys: list[tuple], run: list[int]) -> StateFn:
        """Constant run -> its unitary (as R = U^T, built on the identity), applied as one GEMM. A run of L
        repeated layers (``_layers``) builds all L layers' single-qubit matrices by one gather and product
        (``_factor_index``) and multiplies them (with the states) as one matrix chain: a few dozen torch
        operations whatever L."""
        dim = 2**self.n
        layers = self._layers(keys, run)
        if layers is not None:
            return self._fused_layers(keys, run, layers)
        funcs = self._compile(keys, run)

        def apply(psi: torch.Tensor, steps: list[Step]) -> torch.Tensor:
            r = torch.eye(dim, dtype=psi.dtype, device=psi.device)
            for f in funcs:
                r = f(r, steps)
            return psi @ r

        return apply

    def _layers(self, keys: list[tuple], run: list[int]) -> tuple[int, int] | None:
        """(h, u) when ``run`` is h constant gates, then L >= 2 repeats of one layer of u steps: a single-qubit
        layer followed by constant gates only (permutations, phases, constant matrices), the same keys in every
        repeat; else None. Only for small states (2^n <= 64), where building L unitaries at once costs less than
        the per-operation overhead of building them one gate at a time."""
        if self.n > 6:
            return None
        starts = [j for j, i in enumerate(run) if keys[i][0] == "sq"]
        if len(starts) < 2:
            return None
        h, u = starts[0], starts[1] - starts[0]
        body = run[h:]
        if len(body) % u or starts != list(range(h, len(run), u)):
            return None
        unit = [keys[i] for i in body[:u]]
        constant = all(k[0] == "mono" or (k[0] == "dense" and k[3] is not None) for k in unit[1:])
        constant = constant and all(keys[i][0] in ("mono", "dense") and keys[i][3] is not None for i in run[:h])
        repeated = all(keys[body[j]] == unit[j % u] for j in range(len(body)))
        return (h, u) if constant and repeated else None

    def _fused_layers(self, keys: list[tuple], run: list[int], layers: tuple[int, int]) -> StateFn:
        h, u = layers
        dim, wires = 2**self.n, keys[run[h]][1]
        head = self._compile(keys, run[:h]) if h else []
        constants = run[h + 1 : h + u]  # the layer's constant gates
        # entry (i, j) of the rows R_l = U_l^T: the product of one entry per wire (identity entries on wires
        # without a gate); a permutation among the constant gates is folded into the index's columns
        position = {w: j for j, w in enumerate(wires)}
        index = _factor_index([position.get(w) for w in range(self.n)], 4 * len(wires)).transpose(1, 0, 2)
        if constants and all(keys[i][0] == "mono" for i in constants):
            perm, _, phases, _ = self._chain(keys, constants)
            index, rest = (index if perm is None else index[:, perm.cpu().numpy()]), []
        else:
            phases, rest = None, self._compile(keys, constants)
        factors = torch.as_tensor(index.reshape(-1, self.n), device=self.device)
        rotations = run[h::u]
        covered = len(wires) == self.n

        def apply(psi: torch.Tensor, steps: list[Step]) -> torch.Tensor:
            mats = _layer_matrices([steps[i] for i in rotations])  # [L, k, 2, 2]
            count = mats.shape[0]
            flat = mats.reshape(count, -1)
            if not covered:  # wires without a gate: identity entries, 1 and 0
                flat = torch.cat([flat, _ONE_ZERO.to(flat).expand(count, 2)], 1)
            r = gather_product(flat, factors).reshape(count * dim, dim)  # rows: every layer's U_l^T (then gates)
            if phases is not None:
                r = r * phases
            for f in rest:
                r = f(r, steps)
            for f in head:
                psi = f(psi, steps)
            # the state's rows go through r[0], r[1], ...: the cheapest order of the chain, one call
            return torch.linalg.multi_dot([psi, *r.reshape(count, dim, dim).unbind(0)])

        return apply

    def run(self, steps: list[Step], b: int) -> torch.Tensor:
        psi = self.init(steps, b)
        for f in self.funcs:
            psi = f(psi, steps)
        return psi

    def run_to_tail(self, steps: list[Step], b: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(psi, rows)``: the state before the plan's ``tail`` (which must be set) and the index that takes
        vectors ``v`` of the final probabilities to ``v[rows]`` of these (None: the same vectors): for
        measurements that read the probabilities only."""
        if self.tail is None:
            raise ValueError("the plan has no trailing permutation")
        psi = self.init(steps, b)
        for f in self.funcs[:-1]:
            psi = f(psi, steps)
        return psi, self.tail[0]


def initial_steps(keys: list[tuple]) -> int:
    """How many of the step ``keys`` a plan's initial state takes (a given state, or the product-state prefix);
    each key after them is run by a step function (at least one more state kept under backprop)."""
    if keys and keys[0][0] == "init":
        return 1
    start = 0
    while start < len(keys) and Plan._product_friendly(keys[start]):
        start += 1
    return start
