"""Divergent component of motion (DCM) on the linear inverted pendulum, for piecewise-linear ZMPs.

**Model.** The centre of mass ``c`` (3,) moves as a linear inverted pendulum (LIPM) over the
zero-moment point ``r`` (3,) on the ground, at a constant height ``Δz = g / ω²`` above it. With the
*virtual repellent point* (VRP) ``v = r + Δz e_z`` (Englsberger, Ott and Albu-Schäffer 2015,
"Three-dimensional bipedal walking control based on divergent component of motion", IEEE T-RO
31(2), Sec. II), the dynamics are

    c̈ = ω² (c − v),    ξ = c + ċ / ω (the DCM, or capture point),    ξ̇ = ω (ξ − v),    ċ = ω (ξ − c),

which on flat ground is exactly the LIPM ``c̈_xy = ω² (c_xy − r_xy)`` at constant height, and with
footholds at different heights moves the CoM height with the VRP. The ZMP here is the eCMP of the
paper (zero centroidal angular momentum rate).

**Planning** (the paper's Sec. IV, recursive DCM planning, solved backwards from a final rest
state). The ZMP is given as a continuous piecewise-*linear* function of time through knots
``(t_j, r_j)``, constant after the last knot. Instead of the paper's constant VRPs with polynomial
DCM blending in double support (its continuous double support, after Englsberger et al. IROS
2014), the ZMP moves linearly from foot to foot during double support: it then stays on the
segment between the two feet (inside the support polygon by construction), the load moves
continuously from one foot to the other, and every quantity has a closed form. On a segment with
slope ``s_j = (r_{j+1} − r_j) / (t_{j+1} − t_j)`` the only bounded solution ending at ``ξ_{j+1}`` is

    ξ(t) = v(t) + s_j / ω + e^{ω (t − t_{j+1})} (ξ_{j+1} − v_{j+1} − s_j / ω),

recursed backwards from ``ξ_K = v_K`` (at rest over the last ZMP). The CoM then follows forward
from its initial value by ``ċ = ω (ξ − c)``:

    c(t) = v(t) + ½ e^{ω (t − t_{j+1})} d_{j+1} + B_j e^{−ω (t − t_j)},    d_{j+1} = ξ_{j+1} − v_{j+1} − s_j / ω,

with ``B_j`` from continuity at ``t_j`` (each exponential is anchored where it is at most 1, so long
segments stay accurate). ``ξ``, ``c`` and ``ċ`` are continuous, and ``c̈ = ω² (c − v)`` is continuous
because the ZMP is.

The DCM at the first knot is fixed by the knots (the backward recursion); a plan starts
consistently from a measured state only when its knots are chosen for it (see
:mod:`wbc.locomotion.timeline`, which solves one free knot or foothold for that).
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from ..errors import InputError

__all__ = ["GRAVITY", "omega_of_height", "dcm_of", "PiecewiseLinearZMP", "DCMTrajectory"]

#: Standard gravity, m/s² (wbc models use (0, 0, -9.81)).
GRAVITY = 9.81


def omega_of_height(height: float, gravity: float = GRAVITY) -> float:
    """The LIPM's natural frequency ``ω = √(g / Δz)`` (1/s) for a CoM ``height`` (m) above the ZMP."""
    if not (math.isfinite(height) and height > 0):
        raise InputError(f"the CoM height above the ground must be positive, got {height!r} m")
    if not (math.isfinite(gravity) and gravity > 0):
        raise InputError(f"gravity must be positive, got {gravity!r} m/s²")
    return math.sqrt(gravity / height)


def dcm_of(com, com_velocity, omega: float) -> np.ndarray:
    """The DCM ``ξ = c + ċ / ω`` (3,) of a CoM position (3,) m and velocity (3,) m/s."""
    c = np.asarray(com, dtype=float).reshape(3)
    cd = np.asarray(com_velocity, dtype=float).reshape(3)
    return c + cd / omega


class PiecewiseLinearZMP:
    """A continuous piecewise-linear ZMP through knots, constant before the first and after the last.

    Args:
        times: knot times (K,), s, non-decreasing (equal times make a jump, which callers avoid).
        points: knot ZMPs (K, 3), m, world.
    """

    def __init__(self, times, points) -> None:
        t = np.asarray(times, dtype=float).reshape(-1)
        P = np.asarray(points, dtype=float)
        if P.shape != (len(t), 3) or len(t) == 0:
            raise InputError(f"ZMP knots: need times (K,) and points (K, 3) with K >= 1, got {t.shape}, {P.shape}")
        if not (np.all(np.isfinite(t)) and np.all(np.isfinite(P))):
            raise InputError("ZMP knots must be finite")
        if np.any(np.diff(t) <= 0):
            raise InputError(f"ZMP knot times must increase strictly, got {t.tolist()}")
        self.times = t
        self.points = P
        dt = np.diff(t)
        self.slopes = np.diff(P, axis=0) / dt[:, None] if len(t) > 1 else np.zeros((0, 3))

    def segment(self, t) -> np.ndarray:
        """Segment index (n,) of times ``t`` (n,): -1 before the first knot, K-1 after the last."""
        return np.searchsorted(self.times, np.asarray(t, dtype=float), side="right") - 1

    def __call__(self, t) -> tuple[np.ndarray, np.ndarray]:
        """``(r, ṙ)`` at times ``t`` (n,): arrays (n, 3)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        j = self.segment(t)
        K = len(self.times)
        r = np.empty((len(t), 3))
        rd = np.zeros((len(t), 3))
        before, after = j < 0, j >= K - 1
        r[before] = self.points[0]
        r[after] = self.points[-1]
        mid = ~(before | after)
        if np.any(mid):
            jm = j[mid]
            rd[mid] = self.slopes[jm]
            r[mid] = self.points[jm] + rd[mid] * (t[mid] - self.times[jm])[:, None]
        return r, rd


class DCMTrajectory:
    """The DCM and CoM reference of a piecewise-linear ZMP, in closed form (see the module docstring).

    Args:
        zmp: the ZMP plan.
        omega: LIPM frequency, 1/s.
        com0: the CoM (3,) at the first knot time, m.

    Before the first knot the trajectory holds its first-knot state (``t`` is clamped).
    """

    def __init__(self, zmp: PiecewiseLinearZMP, omega: float, com0) -> None:
        if not (math.isfinite(omega) and omega > 0):
            raise InputError(f"omega must be positive, got {omega!r}")
        c0 = np.asarray(com0, dtype=float).reshape(-1)
        if c0.shape != (3,) or not np.all(np.isfinite(c0)):
            raise InputError(f"com0 must be 3 finite numbers, got {c0}")
        self.zmp = zmp
        self.omega = float(omega)
        self.height = GRAVITY / self.omega**2  # Δz: VRP height above the ZMP
        w, t, P = self.omega, zmp.times, zmp.points
        K = len(t)
        up = np.array([0.0, 0.0, self.height])
        V = P + up  # VRP knots
        # backward recursion of the DCM at the knots, and the end anchors d_{j+1} per segment
        xi = np.empty((K, 3))
        xi[-1] = V[-1]
        d = np.zeros((max(K - 1, 0), 3))
        for j in range(K - 2, -1, -1):
            s = zmp.slopes[j]
            d[j] = xi[j + 1] - V[j + 1] - s / w
            xi[j] = V[j] + s / w + math.exp(-w * (t[j + 1] - t[j])) * d[j]
        # forward CoM: c(t) = v(t) + ½ e^{ω(t−t_{j+1})} d_j + B_j e^{−ω(t−t_j)} on segment j
        B = np.empty((K, 3))  # B[K-1] is the decaying term after the last knot (d = 0 there)
        c = c0.copy()
        for j in range(K - 1):
            B[j] = c - V[j] - 0.5 * math.exp(-w * (t[j + 1] - t[j])) * d[j]
            c = V[j + 1] + 0.5 * d[j] + B[j] * math.exp(-w * (t[j + 1] - t[j]))
        B[K - 1] = c - V[K - 1]
        self._V, self._xi, self._d, self._B = V, xi, d, B
        self._times_list = [float(x) for x in t]
        self.com0 = c0

    def evaluate(self, t) -> dict:
        """Everything at times ``t`` (n,) (scalars give n = 1): arrays (n, 3) keyed ``"zmp"``,
        ``"zmp_velocity"``, ``"vrp"``, ``"dcm"``, ``"dcm_velocity"``, ``"com"``, ``"com_velocity"``,
        ``"com_acceleration"``, ``"com_jerk"``."""
        if np.ndim(t) == 0:
            return self._evaluate_scalar(float(t))
        w = self.omega
        tt = np.atleast_1d(np.asarray(t, dtype=float))
        times = self.zmp.times
        tt = np.maximum(tt, times[0])
        r, rd = self.zmp(tt)
        v = r + np.array([0.0, 0.0, self.height])
        j = self.zmp.segment(tt)
        K = len(times)
        last = j >= K - 1
        jj = np.minimum(j, K - 2) if K > 1 else np.zeros_like(j)
        n = len(tt)
        grow = np.zeros((n, 1))  # ½ e^{ω (t − t_{j+1})} d_j, zero after the last knot
        if K > 1:
            e_end = np.exp(-w * np.maximum(times[jj + 1] - tt, 0.0))[:, None]
            grow = np.where(last[:, None], 0.0, e_end * self._d[jj])
        jb = np.where(last, K - 1, jj)
        e_start = np.exp(-w * (tt - times[jb]))[:, None]
        decay = self._B[jb] * e_start
        xi = v + rd / w + grow
        xid = w * (xi - v)
        c = v + 0.5 * grow + decay
        cd = rd + w * 0.5 * grow - w * decay
        cdd = w * w * (c - v)
        cddd = w * w * (cd - rd)
        return {
            "zmp": r,
            "zmp_velocity": rd,
            "vrp": v,
            "dcm": xi,
            "dcm_velocity": xid,
            "com": c,
            "com_velocity": cd,
            "com_acceleration": cdd,
            "com_jerk": cddd,
        }

    def _evaluate_scalar(self, t: float) -> dict:
        """:meth:`evaluate` at one time (the same formulas without array bookkeeping)."""
        w, times, P = self.omega, self.zmp.times, self.zmp.points
        K = len(times)
        t = max(t, float(times[0]))
        j = bisect.bisect_right(self._times_list, t) - 1
        if j >= K - 1:
            r, rd, grow, jb = P[-1], np.zeros(3), np.zeros(3), K - 1
        else:
            rd = self.zmp.slopes[j]
            r = P[j] + rd * (t - times[j])
            grow = math.exp(-w * (times[j + 1] - t)) * self._d[j]
            jb = j
        v = r + np.array([0.0, 0.0, self.height])
        decay = self._B[jb] * math.exp(-w * (t - times[jb]))
        xi = v + rd / w + grow
        c = v + 0.5 * grow + decay
        cd = rd + 0.5 * w * grow - w * decay
        out = {
            "zmp": r,
            "zmp_velocity": rd,
            "vrp": v,
            "dcm": xi,
            "dcm_velocity": w * (xi - v),
            "com": c,
            "com_velocity": cd,
            "com_acceleration": w * w * (c - v),
            "com_jerk": w * w * (cd - rd),
        }
        return {k: np.array(x, dtype=float).reshape(1, 3) for k, x in out.items()}
