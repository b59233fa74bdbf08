"""Swing-foot trajectories: smooth polynomials in time from lift-off to touchdown.

A swing moves the sole frame from a start state to a foothold over ``[t_start, t_end]``:

- horizontally (x, y) and in yaw: a quintic in normalized time ``s = (t − t_start) / T`` matching
  position, velocity and acceleration at both ends (from rest to rest: the minimum-jerk profile
  ``10 s³ − 15 s⁴ + 6 s⁵`` along the straight line between the footholds);
- vertically: a sextic matching the end states (height, vertical velocity, zero vertical
  acceleration) and passing through the apex height at the apex time (mid-swing by default); the
  end vertical velocity is ``−touchdown_velocity`` (0: the foot lands at rest);
- with a ``window`` ``(a, b)`` (fractions of the swing), the horizontal motion and yaw happen in
  ``[t_start + a T, t_end − b T]`` only: the foot first rises, then moves, then descends (to clear a
  stair's edge; see :mod:`wbc.locomotion.terrain`); a separate ``lateral_window`` for y lets a
  crossover step go ahead of the stance foot before it crosses;
- between footholds on inclined surfaces the sole's tilt (the rotation taking z onto the surface
  normal) turns about a fixed axis with the same minimum-jerk profile as the horizontal motion;
- a swing re-planned in flight (new foothold or timing, :meth:`SwingTrajectory.replanned`) starts
  from the current state (position, velocity, acceleration), so the reference stays C² through the
  change; once past the apex time its vertical profile is a quintic without the apex constraint.

Poses are sole-frame poses (yaw, then tilt; flat soles rotate about z only); velocities and accelerations
are spatial ``[linear; angular]`` (6,) in world axes (what ``wbc.tasks.FrameTask`` takes). Outside
``[t_start, t_end]`` the trajectory holds its end states with zero velocity (acceleration too).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ..errors import InputError
from .footsteps import Footstep, tilt_rotation

__all__ = ["SwingState", "SwingTrajectory"]


@dataclasses.dataclass(frozen=True)
class SwingState:
    """A sole frame's state: ``position`` (3,) m, ``yaw`` rad, and their first two derivatives.

    ``velocity`` and ``acceleration`` are (4,): ``[ẋ, ẏ, ż, ψ̇]`` and ``[ẍ, ÿ, z̈, ψ̈]``; ``tilt`` the
    sole's tilt (3, 3) (None: flat).
    """

    position: np.ndarray
    yaw: float
    velocity: np.ndarray
    acceleration: np.ndarray
    tilt: np.ndarray | None = None

    @classmethod
    def at_rest(cls, footstep: Footstep) -> SwingState:
        tilt = None if footstep.normal is None else tilt_rotation(footstep.normal)
        return cls(np.array(footstep.position), footstep.yaw, np.zeros(4), np.zeros(4), tilt)


def _minimum_jerk(s: float) -> tuple[float, float, float]:
    """``10 s³ − 15 s⁴ + 6 s⁵`` and its first two derivatives in ``s``."""
    return (
        s**3 * (10 - 15 * s + 6 * s * s),
        30 * s * s * (1 - 2 * s + s * s),
        60 * s * (1 - 3 * s + 2 * s * s),
    )


def _axis_angle(R: np.ndarray) -> tuple[np.ndarray, float]:
    """Unit axis (3,) and angle (rad) of a rotation (3, 3) (angle < π)."""
    angle = math.acos(max(-1.0, min(1.0, 0.5 * (np.trace(R) - 1.0))))
    if angle < 1e-12:
        return np.array([0.0, 0.0, 1.0]), 0.0
    w = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    return w / np.linalg.norm(w), angle


def _solve_poly(conditions: list[tuple[float, int, float]], degree: int) -> np.ndarray:
    """Coefficients (degree+1,) (increasing powers) of the polynomial meeting ``(s, derivative, value)``."""
    n = degree + 1
    A = np.zeros((len(conditions), n))
    b = np.zeros(len(conditions))
    for row, (s, k, value) in enumerate(conditions):
        for p in range(k, n):
            A[row, p] = math.factorial(p) / math.factorial(p - k) * s ** (p - k)
        b[row] = value
    return np.linalg.solve(A, b)


def _derivative(C: np.ndarray) -> np.ndarray:
    """Coefficients (k, n) (increasing powers) of the derivatives of the rows of ``C`` (k, n)."""
    D = np.zeros_like(C)
    D[:, :-1] = C[:, 1:] * np.arange(1, C.shape[1])
    return D


class SwingTrajectory:
    """A swing of one foot from ``start`` (a :class:`SwingState`) at ``t_start`` to ``target`` at ``t_end``.

    Args:
        start: the sole state at ``t_start`` (at rest on the previous foothold for a fresh swing).
        target: the foothold to land on.
        t_start, t_end: lift-off (or re-planning) and touchdown times, s (``t_end > t_start``).
        lift_height: apex height above the higher of the two footholds, m (≥ 0).
        touchdown_velocity: downward vertical speed at touchdown, m/s (≥ 0; 0 lands at rest).
        apex_time: when the apex is reached, s; default mid-swing. An apex time not strictly
            inside ``(t_start, t_end)`` drops the apex constraint (the foot goes straight down).
        apex_height: the apex's absolute height, m; default ``lift_height`` above the higher
            foothold (a re-planned swing keeps its original apex).
        window: fractions ``(a, b)`` of the swing at its start and end without horizontal motion
            (the foot rises before it moves and descends after); only from a start at rest.
        lateral_window: the window of the y motion (default ``window``).
        flat_top: the vertical motion is two quintics, up to the apex and down from it, at rest
            vertically there: the apex is the highest point (the single sextic through the apex
            overshoots it when the footholds' heights differ).
    """

    def __init__(
        self,
        start: SwingState,
        target: Footstep,
        t_start: float,
        t_end: float,
        lift_height: float = 0.05,
        touchdown_velocity: float = 0.0,
        apex_time: float | None = None,
        apex_height: float | None = None,
        window: tuple[float, float] = (0.0, 0.0),
        flat_top: bool = False,
        lateral_window: tuple[float, float] | None = None,
    ) -> None:
        windows = []
        for w in (window, window if lateral_window is None else lateral_window):
            a_w, b_w = (float(x) for x in w)
            if not (a_w >= 0 and b_w >= 0 and a_w + b_w < 0.9):
                raise InputError(f"swing window fractions must be >= 0 with a sum below 0.9, got {w!r}")
            windows.append((a_w, b_w))
        self.window, self.lateral_window = windows
        if (self.window != (0.0, 0.0) or self.lateral_window != (0.0, 0.0)) and (
            np.any(np.asarray(start.velocity)[[0, 1, 3]] != 0) or np.any(np.asarray(start.acceleration)[[0, 1, 3]] != 0)
        ):
            raise InputError("a swing window needs a start at rest horizontally (a fresh swing)")
        if not (math.isfinite(t_start) and math.isfinite(t_end) and t_end > t_start):
            raise InputError(f"swing times must be finite with t_end > t_start, got {t_start!r}, {t_end!r}")
        if not (math.isfinite(lift_height) and lift_height >= 0):
            raise InputError(f"lift_height must be >= 0 m, got {lift_height!r}")
        if not (math.isfinite(touchdown_velocity) and touchdown_velocity >= 0):
            raise InputError(f"touchdown_velocity must be >= 0 m/s (downwards), got {touchdown_velocity!r}")
        self.start, self.target = start, target
        self.foot = target.foot
        self.t_start, self.t_end = float(t_start), float(t_end)
        self.lift_height, self.touchdown_velocity = float(lift_height), float(touchdown_velocity)
        T = self.t_end - self.t_start
        self.duration = T
        self.apex_time = self.t_start + 0.5 * T if apex_time is None else float(apex_time)
        p0, v0, a0 = np.asarray(start.position, float), np.asarray(start.velocity, float), start.acceleration
        a0 = np.asarray(a0, float)
        p1 = target.position
        # unwrap the target yaw next to the start yaw
        yaw1 = start.yaw + math.atan2(math.sin(target.yaw - start.yaw), math.cos(target.yaw - start.yaw))
        self.target_yaw = yaw1
        horizontal = [(p0[0], v0[0], a0[0], p1[0]), (p0[1], v0[1], a0[1], p1[1]), (start.yaw, v0[3], a0[3], yaw1)]
        C = np.zeros((4, 7))  # rows x, y, z, yaw; columns powers of s = (t − t_start) / T
        for row, (x0, xd0, xdd0, x1) in zip((0, 1, 3), horizontal):
            cond = [(0.0, 0, x0), (0.0, 1, xd0 * T), (0.0, 2, xdd0 * T * T), (1.0, 0, x1), (1.0, 1, 0.0), (1.0, 2, 0.0)]
            C[row, 0:6] = _solve_poly(cond, 5)
        cond = [
            (0.0, 0, p0[2]),
            (0.0, 1, v0[2] * T),
            (0.0, 2, a0[2] * T * T),
            (1.0, 0, p1[2]),
            (1.0, 1, -self.touchdown_velocity * T),
            (1.0, 2, 0.0),
        ]
        s_apex = (self.apex_time - self.t_start) / T
        self.apex_height = max(p0[2], p1[2]) + self.lift_height if apex_height is None else float(apex_height)
        if 0.0 < s_apex < 1.0:
            C[2, :] = _solve_poly([*cond, (s_apex, 0, self.apex_height)], 6)
        else:
            C[2, 0:6] = _solve_poly(cond, 5)
        D = _derivative(C)
        self._C, self._D, self._DD = C, D / T, _derivative(D) / (T * T)
        self._s_apex = s_apex
        self._halves = None
        if flat_top and 0.0 < s_apex < 1.0:  # z in each half's own normalized time
            T1, T2 = s_apex * T, (1.0 - s_apex) * T
            up = _solve_poly(
                [(0.0, 0, p0[2]), (0.0, 1, v0[2] * T1), (0.0, 2, a0[2] * T1 * T1)]
                + [(1.0, 0, self.apex_height), (1.0, 1, 0.0), (1.0, 2, 0.0)],
                5,
            )
            down = _solve_poly(
                [(0.0, 0, self.apex_height), (0.0, 1, 0.0), (0.0, 2, 0.0)]
                + [(1.0, 0, p1[2]), (1.0, 1, -self.touchdown_velocity * T2), (1.0, 2, 0.0)],
                5,
            )
            self._halves = ((up, T1), (down, T2))
        R0 = np.eye(3) if start.tilt is None else np.asarray(start.tilt, float)
        R1 = np.eye(3) if target.normal is None else tilt_rotation(target.normal)
        self._tilt0 = R0
        self._tilt_axis, self._tilt_angle = _axis_angle(R1 @ R0.T)
        self.tilted = start.tilt is not None or target.normal is not None

    def _sigma(self, t: float, lateral: bool = False) -> tuple[float, float]:
        """The horizontal motion's normalized time at ``t`` (in [0, 1]) and its rate (1/s) (``lateral``:
        of the y motion)."""
        a, b = self.lateral_window if lateral else self.window
        span = (1.0 - a - b) * self.duration
        sigma = ((t - self.t_start) - a * self.duration) / span
        if sigma <= 0.0 or sigma >= 1.0:
            return min(max(sigma, 0.0), 1.0), 0.0
        return sigma, 1.0 / span

    def tilt(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The sole's tilt at ``t``: rotation (3, 3), angular velocity (3,) and acceleration (3,), world."""
        sigma, rate = self._sigma(min(max(t, self.t_start), self.t_end))
        p, dp, ddp = _minimum_jerk(sigma)
        k, angle = self._tilt_axis, self._tilt_angle
        K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
        phi = angle * p
        E = np.eye(3) + math.sin(phi) * K + (1 - math.cos(phi)) * (K @ K)
        return E @ self._tilt0, angle * dp * rate * k, angle * ddp * rate * rate * k

    def reference(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The sole's pose (4, 4), spatial velocity (6,) and acceleration (6,) (``[linear; angular]``,
        world axes) at ``t``: the yaw, then the tilt."""
        st = self.state(t)
        R_tilt, w_tilt, a_tilt = self.tilt(t)
        c, sn = math.cos(st.yaw), math.sin(st.yaw)
        pose = np.eye(4)
        pose[0:3, 0:3] = R_tilt @ np.array([[c, -sn, 0.0], [sn, c, 0.0], [0.0, 0.0, 1.0]])
        pose[0:3, 3] = st.position
        n = R_tilt[:, 2]
        yaw_rate, yaw_acc = st.velocity[3], st.acceleration[3]
        omega = w_tilt + yaw_rate * n
        alpha = a_tilt + yaw_acc * n + yaw_rate * np.cross(w_tilt, n)
        return pose, np.concatenate([st.velocity[0:3], omega]), np.concatenate([st.acceleration[0:3], alpha])

    @classmethod
    def between(
        cls,
        start: Footstep,
        target: Footstep,
        t_start: float,
        t_end: float,
        **options: Any,
    ) -> SwingTrajectory:
        """A fresh swing from the foothold ``start`` (at rest) to ``target``; ``options`` are the
        constructor's keywords (``lift_height``, ``touchdown_velocity``, ...)."""
        if start.foot is not target.foot:
            raise InputError(f"a swing moves one foot: start is the {start.foot.value}, target the {target.foot.value}")
        return cls(SwingState.at_rest(start), target, t_start, t_end, **options)

    def state(self, t: float) -> SwingState:
        """The sole state at time ``t``; before ``t_start`` the start pose at rest, from ``t_end`` on the
        target at rest."""
        tilt = None if not self.tilted else self.tilt(t)[0]
        if t >= self.t_end:
            return SwingState(np.array(self.target.position), self.target_yaw, np.zeros(4), np.zeros(4), tilt)
        s = max(t - self.t_start, 0.0) / self.duration
        powers = s ** np.arange(7)
        x = self._C @ powers
        if t < self.t_start:
            return SwingState(x[0:3], float(x[3]), np.zeros(4), np.zeros(4), tilt)
        v, a = self._D @ powers, self._DD @ powers
        if self._halves is not None:
            first = s < self._s_apex
            coef, Th = self._halves[0 if first else 1]
            u = s / self._s_apex if first else (s - self._s_apex) / (1.0 - self._s_apex)
            pu = u ** np.arange(6)
            d1, d2 = _derivative(coef[None, :])[0], _derivative(_derivative(coef[None, :]))[0]
            x[2], v[2], a[2] = coef @ pu, d1 @ pu / Th, d2 @ pu / (Th * Th)
        if self.window != (0.0, 0.0) or self.lateral_window != (0.0, 0.0):  # in the windows' time
            T = self.duration
            for rows, lateral in (([0, 3], False), ([1], True)):
                sigma, rate = self._sigma(t, lateral)
                ps = sigma ** np.arange(7)
                x[rows] = self._C[rows] @ ps
                v[rows] = (self._D[rows] * T) @ ps * rate
                a[rows] = (self._DD[rows] * T * T) @ ps * rate * rate
        return SwingState(x[0:3], float(x[3]), v, a, tilt)

    def replanned(self, t: float, target: Footstep, t_end: float) -> SwingTrajectory:
        """The swing re-planned at ``t`` to land on ``target`` at ``t_end``, continuing from its state at ``t``.

        Keeps the lift height and touchdown velocity; keeps the apex time when it is still ahead.
        """
        if target.foot is not self.foot:
            raise InputError(f"this swing moves the {self.foot.value} foot, not the {target.foot.value}")
        if t <= self.t_start:
            return SwingTrajectory(self.start, target, self.t_start, t_end, self.lift_height, self.touchdown_velocity)
        apex = self.apex_time if self.apex_time > t else None
        now = self.state(t)
        return SwingTrajectory(
            now,
            target,
            t,
            t_end,
            self.lift_height,
            self.touchdown_velocity,
            apex if apex is not None else t_end,  # t_end: no apex constraint
            self.apex_height,
        )
