"""Joint constraint subspaces: what a joint forbids, as constant matrices in its moving frame.

A joint of ``nᵢ`` degrees of freedom lets its body move along ``S`` (6, nᵢ) relative to its parent
(:func:`wbc.model.joints.motion_subspace`) and forbids the other ``mᵢ = 6 − nᵢ`` directions: in
maximal coordinates it is the constraint ``Tᵀ (aᵢ − Xᵢ a_λ − cᵢ) = 0`` on the two body
accelerations, with ``T`` (6, mᵢ) an orthonormal basis of the complement of ``S`` (``Tᵀ S = 0``).
The wrench the joint transmits is ``f = T λ + D τ`` with ``D = S (SᵀS)⁻¹`` (``Sᵀ D = I``), so its
generalized force is ``Sᵀ f = τ`` and ``λ`` (mᵢ) are the constraint (reaction) coordinates.

``T`` is built per 3-block (linear, angular) so that axis-aligned joints get unit columns and their
constraint rows are plain selections (zeros fold away when tracing).
"""

from __future__ import annotations

import numpy as np

from ...model.joints import motion_subspace
from ...model.model import Joint

__all__ = ["constraint_subspace", "force_basis"]


def _complement(U: np.ndarray) -> np.ndarray:
    """An orthonormal basis (3, 3 − r) of the complement of the columns ``U`` (3, r) in R³: unit
    vectors when ``U`` holds unit vectors, else from an SVD."""
    if U.shape[1] == 0:
        return np.eye(3)
    keep = [k for k in range(3) if not np.any(np.abs(U[k, :]) > 0.0)]
    if len(keep) == 3 - U.shape[1] and np.allclose(np.delete(U, keep, axis=0) ** 2 @ np.ones(U.shape[1]), 1.0):
        return np.eye(3)[:, keep]
    _, s, Vt = np.linalg.svd(U.T)
    rank = int(np.sum(s > 1e-12))
    return Vt[rank:].T


def constraint_subspace(joint: Joint) -> np.ndarray:
    """``T`` (6, 6 − nᵢ): orthonormal basis of the directions the joint forbids, ``Tᵀ S = 0``."""
    S = motion_subspace(joint)
    blocks = []
    for rows in (slice(0, 3), slice(3, 6)):
        cols = [k for k in range(S.shape[1]) if np.any(S[rows, k] != 0.0)]
        C = _complement(S[rows, cols])
        full = np.zeros((6, C.shape[1]))
        full[rows, :] = C
        blocks.append(full)
    T = np.hstack(blocks)
    if T.shape[1] != 6 - S.shape[1] or np.max(np.abs(T.T @ S), initial=0.0) > 1e-12:  # a joint mixing blocks
        _, _, Vt = np.linalg.svd(S.T)
        T = Vt[S.shape[1] :].T
    return T


def force_basis(joint: Joint) -> np.ndarray:
    """``D = S (SᵀS)⁻¹`` (6, nᵢ): the wrench of unit generalized forces (``Sᵀ D = I``, ``Tᵀ D = 0``);
    ``Dᵀ`` is also the left inverse of ``S`` that reads joint accelerations, ``q̈ᵢ = Dᵀ (aᵢ − Xᵢ a_λ − cᵢ)``."""
    S = motion_subspace(joint)
    return S @ np.linalg.inv(S.T @ S)
