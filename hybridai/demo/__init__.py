"""``hybridai demo``: the three-domain flagship (``hybrid``) and the classical + quantum digits demo (``digits``)."""

from hybridai.demo.digits import (
    accuracy,
    classical_model,
    digits_split,
    entangling_classifier,
    hybrid_model,
    run_demo,
    train,
)
from hybridai.demo.hybrid import run_hybrid_demo

__all__ = [
    "accuracy",
    "classical_model",
    "digits_split",
    "entangling_classifier",
    "hybrid_model",
    "run_demo",
    "run_hybrid_demo",
    "train",
]
