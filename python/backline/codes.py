"""Parity-check matrices of small CSS codes, for :func:`backline.css_bp_decoder` and the
examples: repetition codes, hypergraph products (the [[13,1,3]] code is the product of two
[3,1,3] repetition codes), the Steane code; and GF(2) helpers to judge a residual error."""

from __future__ import annotations

import numpy as np


def repetition(n: int) -> np.ndarray:
    """The ``(n-1) × n`` parity checks of the length-``n`` repetition code."""
    h = np.zeros((n - 1, n), dtype=np.uint8)
    for i in range(n - 1):
        h[i, i] = h[i, i + 1] = 1
    return h


def hypergraph_product(h1: np.ndarray, h2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Hx, Hz)`` of the hypergraph product of two classical codes (Tillich–Zémor):
    ``Hx = [H1 ⊗ I | I ⊗ H2ᵀ]``, ``Hz = [I ⊗ H2 | H1ᵀ ⊗ I]``."""
    m1, n1 = h1.shape
    m2, n2 = h2.shape
    hx = np.hstack([np.kron(h1, np.eye(n2, dtype=np.uint8)), np.kron(np.eye(m1, dtype=np.uint8), h2.T)])
    hz = np.hstack([np.kron(np.eye(n1, dtype=np.uint8), h2), np.kron(h1.T, np.eye(m2, dtype=np.uint8))])
    return hx % 2, hz % 2


def hgp13() -> tuple[np.ndarray, np.ndarray]:
    """The [[13,1,3]] code: the hypergraph product of two [3,1,3] repetition codes."""
    return hypergraph_product(repetition(3), repetition(3))


def steane() -> tuple[np.ndarray, np.ndarray]:
    """The Steane [[7,1,3]] code (Hx = Hz = the Hamming [7,4] checks)."""
    h = np.array([[(j + 1) >> k & 1 for j in range(7)] for k in range(3)], dtype=np.uint8)
    return h, h.copy()


def gf2_rank(m: np.ndarray) -> int:
    """Rank over GF(2)."""
    a = (np.array(m, dtype=np.uint8) % 2).copy()
    rank = 0
    rows, cols = a.shape
    for c in range(cols):
        pivot = next((r for r in range(rank, rows) if a[r, c]), None)
        if pivot is None:
            continue
        a[[rank, pivot]] = a[[pivot, rank]]
        for r in range(rows):
            if r != rank and a[r, c]:
                a[r] ^= a[rank]
        rank += 1
        if rank == rows:
            break
    return rank


def in_rowspace(h: np.ndarray, v: np.ndarray) -> bool:
    """Whether ``v`` is a GF(2) combination of the rows of ``h`` (a stabilizer)."""
    return gf2_rank(np.vstack([h, v])) == gf2_rank(h)
