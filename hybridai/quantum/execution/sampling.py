"""Exact sampling from batched probabilities: counts of ``shots`` draws per sample, seeded.

``counts(probs [B, d], shots, generator)`` draws ``shots`` outcomes for every row from its own
distribution with a ``torch.Generator`` (never the global RNG). For a few outcomes (``d <=
BINOMIAL_MAX_OUTCOMES``) it draws the counts directly as a chain of binomials (``c_0 ~ Bin(N, p_0)``,
``c_j ~ Bin(N - c_0 - ... - c_{j-1}, p_j / (1 - p_0 - ... - p_{j-1}))``), which has exactly the
multinomial distribution and costs ``d`` vectorised draws instead of ``B * N`` samples; otherwise it
draws the ``B * N`` samples with ``torch.multinomial`` and counts them.
"""

from __future__ import annotations

import torch

BINOMIAL_MAX_OUTCOMES = 64


def counts(probs: torch.Tensor, shots: int, generator: torch.Generator) -> torch.Tensor:
    """Multinomial counts ``[B, d]`` of ``shots`` draws per row of ``probs [B, d]`` (drawn on the CPU)."""
    p = probs.detach().to("cpu", torch.float64).clamp_min(0)
    p = p / p.sum(-1, keepdim=True)
    if p.shape[-1] > BINOMIAL_MAX_OUTCOMES:
        samples = torch.multinomial(p, shots, replacement=True, generator=generator)
        out = torch.zeros_like(p).scatter_add_(1, samples, torch.ones_like(samples, dtype=p.dtype))
        return out.to(probs.device, probs.dtype)
    out = torch.zeros_like(p)
    left = torch.full_like(p[:, 0], float(shots))
    mass = torch.ones_like(left)
    for j in range(p.shape[-1] - 1):
        q = (p[:, j] / mass.clamp_min(1e-300)).clamp(0, 1)
        c = torch.binomial(left, q, generator=generator)
        out[:, j] = c
        left = left - c
        mass = mass - p[:, j]
    out[:, -1] = left
    return out.to(probs.device, probs.dtype)
