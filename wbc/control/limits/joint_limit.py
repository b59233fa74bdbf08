"""The base of the joint position and velocity limits (:class:`JointLimit`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...errors import InputError
from ...model.model import Joint
from ..contributor import Contributor, Runtime
from .joint_selection import JointLimitParameters

__all__ = ["JointLimit"]


class JointLimit(Contributor):
    """What the joint position and velocity limits share: the joints asked for (resolved by their
    ``check``), the braking and velocity-limit requests, the joints' velocity indices and the kernel
    parameters (a :class:`JointLimitParameters` the subclass lays out, the period written at binding)."""

    def __init__(self, joints: Sequence[str] | str | None, braking, velocity_limit, name: str, n_blocks: int) -> None:
        self.name = name
        self._names = None if joints is None else list([joints] if isinstance(joints, str) else joints)
        self._braking_request = braking
        self._velocity_request = velocity_limit
        self.joints: tuple[Joint, ...] = ()
        self._v_indices = np.zeros(0, dtype=int)
        self._p = JointLimitParameters(0, n_blocks)

    @property
    def indices(self) -> np.ndarray:
        """The joints' indices in the state's ``v`` (n,) (the independent velocity of a clustered model)."""
        return self._v_indices.copy()

    @property
    def parameter_size(self) -> int:
        return self._p.array.size

    def parameters(self, runtime: Runtime) -> np.ndarray:
        if not runtime.dt > 0:
            raise InputError(f"{self.name}: the control period must be > 0, got {runtime.dt!r}")
        self._p.set_dt(runtime.dt)
        return self._p.array
