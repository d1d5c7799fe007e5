"""Executor ``statevector``: exact batched state vectors in torch, with backprop, adjoint and parameter-shift
gradients (``backend``); gate matrices (``gates``) and their application (``elementwise``, ``blocks``, ``rotations``),
planned once per circuit structure (``plan``) from tensor primitives (``primitives``), its memory checked before it
runs (``memory``), measured (``measurement``)."""
