"""DCM feedback: a commanded ZMP from the measured DCM, kept inside the support polygon.

The DCM tracking law of Englsberger, Ott and Albu-Schäffer (2015, IEEE T-RO 31(2), Sec. III-B,
"DCM tracking control"): asking the DCM error ``e = ξ − ξ_ref`` to decay at rate ``k_ξ``,
``ė = −k_ξ e``, with ``ξ̇ = ω (ξ − r)`` gives the commanded ZMP (eCMP)

    r_cmd = r_ref + (1 + k_ξ / ω) (ξ − ξ_ref)  [+ k_i ∫ (ξ − ξ_ref) dt]

(the integral term, optional and clamped, removes steady offsets from model errors). The ZMP can
only lie in the support polygon, so ``r_cmd`` is projected onto it (shrunk by a margin); the
projection is reported (``saturated``), since a saturated stabilizer means the DCM can no longer be
steered back by the ankles alone (the cue for a recovery step, :mod:`wbc.locomotion.recovery`).

The CoM acceleration that realizes the commanded ZMP on the LIPM is ``c̈ = ω² (c − r_cmd)``
horizontally; vertically the reference's own acceleration is passed through.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..errors import InputError
from . import polygon as _polygon

__all__ = ["dcm_feedback_zmp", "StabilizerOutput", "DCMStabilizer"]


def dcm_feedback_zmp(zmp_ref, dcm_ref, dcm, omega: float, k_dcm: float) -> np.ndarray:
    """The unconstrained commanded ZMP (2,): ``r_ref + (1 + k_dcm / ω) (ξ − ξ_ref)`` on x, y.

    Args:
        zmp_ref, dcm_ref, dcm: reference ZMP, reference DCM and measured DCM ((2,) or (3,), m; z ignored).
        omega: LIPM frequency, 1/s.
        k_dcm: DCM error decay rate, 1/s (≥ 0).
    """
    r = np.asarray(zmp_ref, float).reshape(-1)[0:2]
    e = np.asarray(dcm, float).reshape(-1)[0:2] - np.asarray(dcm_ref, float).reshape(-1)[0:2]
    return r + (1.0 + k_dcm / omega) * e


@dataclasses.dataclass(frozen=True)
class StabilizerOutput:
    """What the stabilizer commands.

    Attributes:
        zmp: commanded ZMP (3,), m (inside the support polygon; z of the reference ZMP).
        zmp_unconstrained: the feedback law's ZMP (3,) before projection, m.
        dcm: measured DCM (3,), m.
        dcm_error: ``ξ − ξ_ref`` (2,), m.
        com_acceleration: CoM acceleration (3,) realizing ``zmp`` on the LIPM, m/s².
        saturated: whether the projection moved the ZMP (by more than 0.1 mm).
    """

    zmp: np.ndarray
    zmp_unconstrained: np.ndarray
    dcm: np.ndarray
    dcm_error: np.ndarray
    com_acceleration: np.ndarray
    saturated: bool


class DCMStabilizer:
    """DCM tracking with a ZMP kept in the support polygon (see the module docstring).

    Args:
        k_dcm: DCM error decay rate ``k_ξ``, 1/s (≥ 0).
        k_integral: integral gain on the DCM error, 1/s (≥ 0; 0 disables it).
        integral_limit: bound on the integral term's ZMP offset, m.
        margin: the ZMP is kept this far inside the support polygon, m.

    The integral state is the only state; :meth:`reset` clears it.
    """

    def __init__(
        self, k_dcm: float = 2.0, k_integral: float = 0.0, integral_limit: float = 0.02, margin: float = 0.005
    ) -> None:
        for name, v in (("k_dcm", k_dcm), ("k_integral", k_integral), ("integral_limit", integral_limit)):
            if not (math.isfinite(v) and v >= 0):
                raise InputError(f"DCM stabilizer: {name} must be finite and >= 0, got {v!r}")
        if not (math.isfinite(margin) and margin >= 0):
            raise InputError(f"DCM stabilizer: margin must be finite and >= 0, got {margin!r}")
        self.k_dcm, self.k_integral, self.integral_limit, self.margin = k_dcm, k_integral, integral_limit, margin
        self._integral = np.zeros(2)

    def reset(self) -> None:
        """Clear the integral of the DCM error."""
        self._integral = np.zeros(2)

    def compute(self, reference, com, com_velocity, polygon, dt: float = 0.0) -> StabilizerOutput:
        """The commanded ZMP and CoM acceleration for the measured CoM state.

        Args:
            reference: a :class:`~wbc.locomotion.timeline.GaitSample` (its ZMP, DCM, CoM acceleration, ω).
            com: measured CoM (3,), m.
            com_velocity: measured CoM velocity (3,), m/s.
            polygon: the current support polygon (k, 2) (the feet actually in contact).
            dt: time since the last call, s (integrates the DCM error; 0 leaves the integral as is).
        """
        c = np.asarray(com, float).reshape(3)
        cd = np.asarray(com_velocity, float).reshape(3)
        if not (np.all(np.isfinite(c)) and np.all(np.isfinite(cd))):
            raise InputError("DCM stabilizer: the measured CoM state must be finite")
        w = reference.omega
        xi = c + cd / w
        e = xi[0:2] - reference.dcm[0:2]
        if self.k_integral > 0 and dt > 0:
            self._integral = self._integral + e * dt
            bound = self.integral_limit / self.k_integral
            self._integral = np.clip(self._integral, -bound, bound)
        r2 = dcm_feedback_zmp(reference.zmp, reference.dcm, xi, w, self.k_dcm) + self.k_integral * self._integral
        area = _polygon.shrink(polygon, self.margin) if self.margin > 0 else np.asarray(polygon, float)
        p2 = _polygon.project(r2, area)
        z = float(reference.zmp[2])
        zmp = np.array([p2[0], p2[1], z])
        acc = np.empty(3)
        acc[0:2] = w * w * (c[0:2] - p2)
        acc[2] = reference.com_acceleration[2]
        return StabilizerOutput(
            zmp=zmp,
            zmp_unconstrained=np.array([r2[0], r2[1], z]),
            dcm=xi,
            dcm_error=e,
            com_acceleration=acc,
            saturated=bool(np.linalg.norm(p2 - r2) > 1e-4),
        )
