"""Simulation bridge: a MuJoCo model built from a :class:`wbc.Model` (or the user's own MJCF), and
exact state conversion.

MuJoCo is optional (the ``sim`` extra, ``pip install 'wbc[sim]'``); ``import wbc`` never imports it,
this module does.

:class:`MujocoSim` simulates the MuJoCo model :mod:`wbc.sim.mujoco_spec` builds from the wbc model
(its soles, point feet, floor, limits and loops), or a user's own MJCF, and is driven in wbc's
coordinates (:mod:`wbc.sim.mujoco_coordinates`, which converts them exactly). This module also
exports those two modules' public names.

**A user's MJCF** (:meth:`MujocoSim.from_mjcf`): the file itself is simulated, as written (its geoms,
contacts, options, solver settings, passive forces), not a scene generated from the model;
:mod:`wbc.sim.mjcf_scene` says how wbc's joint torques reach its actuators.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

try:
    import mujoco
except ImportError as _e:  # pragma: no cover - exercised only without mujoco
    raise ImportError(
        "wbc.sim.mujoco needs MuJoCo, which is optional: install the 'sim' extra (pip install 'wbc[sim]')"
    ) from _e

from ..errors import FrameError, InputError, ModelError, SimulationDiverged
from ..model import checks
from ..model.clusters import ClosureKind, ClusterModel, LoopClosure
from ..model.configuration import neutral
from ..model.model import Model
from .mujoco_coordinates import (
    acceleration_to_wbc,
    bias_to_wbc,
    mass_matrix_to_wbc,
    q_from_qpos,
    qpos_from_q,
    qpos_layout,
    qvel_from_v,
    v_from_qvel,
    velocity_map,
)
from .mujoco_spec import (
    HEIGHT_FIELD_COLLISION,
    SOLE_CORNER_RADIUS,
    SOLID_COLLISION,
    BoxLike,
    ContactBox,
    ContactParameters,
    ContactSphere,
    LoopParameters,
    SimOptions,
    build_spec,
    contact_box,
    sole_corner_names,
)

__all__ = [
    "BoxLike",
    "SimOptions",
    "HEIGHT_FIELD_COLLISION",
    "SOLE_CORNER_RADIUS",
    "SOLID_COLLISION",
    "ContactBox",
    "ContactSphere",
    "ContactParameters",
    "LoopParameters",
    "MujocoSim",
    "SimulationDiverged",
    "build_spec",
    "sole_corner_names",
    "qpos_from_q",
    "q_from_qpos",
    "velocity_map",
    "qvel_from_v",
    "v_from_qvel",
    "mass_matrix_to_wbc",
    "bias_to_wbc",
    "acceleration_to_wbc",
]

#: MuJoCo's mjMAXVAL: larger controls are zeroed, larger states flag an unstable simulation.
_MAX_VALUE = 1e10
_BAD_STATE = ("mjWARN_BADQPOS", "mjWARN_BADQVEL", "mjWARN_BADQACC")


# ===================================================================================== simulator
@dataclasses.dataclass
class _Push:
    body: int
    point: np.ndarray  # in the body frame, m
    force: np.ndarray  # world frame, N
    steps_left: int


class MujocoSim:
    """A MuJoCo simulation of a :class:`wbc.Model`, driven in wbc coordinates.

    Every query (:meth:`mass_matrix`, :meth:`bias_forces`, :meth:`acceleration`,
    :meth:`contact_forces`, :meth:`frame_placement`) refers to the *current* state, commands and
    pushes: after a :meth:`step`, MuJoCo's derived quantities belong to the state before the step,
    so the first query after it reruns ``mj_forward`` (tens of µs).

    Args:
        model: the robot.
        contact_boxes: soles, each a :class:`ContactBox` or ``(frame, length, width[, thickness])``.
        contact_spheres: point feet, each a :class:`ContactSphere` (reported by :meth:`contact_forces`
            under their frame's name, like the soles).
        timestep: integration step, s (MuJoCo's semi-implicit Euler: ``v += dt a; q ⊕= dt v``).
        floor: add a floor plane at z = 0 (default: for floating-base models).
        position_limits: joint ranges from the model's finite position limits.
        torque_limits: clamp actuator commands to the model's effort limits (the URDF's ``effort``;
            default), as a real robot's drives do; ``False``: apply any torque.
        contact: contact settings of soles and floor.
        scene: called with the ``mujoco.MjSpec`` before it is compiled, to add world geoms (terrain:
            :func:`wbc.sim.terrain.terrain_scene`, with ``floor=False``).

    Raises:
        InputError: bad arguments. FrameError: a contact-box frame the model does not have.
        ModelError: a body MuJoCo cannot simulate (zero mass, actuated free-flyer).

    Attributes:
        model: the wbc model. spec: the ``mujoco.MjSpec``. mjmodel, mjdata: MuJoCo's model and
        data (raw access; writing ``mjdata.qpos`` / ``qvel`` directly bypasses the conversions).
        contact_boxes: the soles. options: the :class:`SimOptions` the scene was built with (None
        for a user's file, :meth:`from_mjcf`).
    """

    def __init__(
        self,
        model: Model | ClusterModel,
        contact_boxes: Iterable[BoxLike] = (),
        *,
        contact_spheres: Iterable[ContactSphere] = (),
        timestep: float = 1e-3,
        floor: bool | None = None,
        position_limits: bool = True,
        torque_limits: bool = True,
        contact: ContactParameters = ContactParameters(),
        loops: LoopParameters = LoopParameters(),
        scene: Callable | None = None,
    ) -> None:
        self.contact_boxes = tuple(contact_box(b) for b in contact_boxes)
        self.contact_spheres = tuple(contact_spheres)
        self.model = model
        self.cluster_model = model if isinstance(model, ClusterModel) else None
        self.tree: Model = model.tree if isinstance(model, ClusterModel) else model
        options = SimOptions(
            self.contact_spheres, timestep, floor, position_limits, torque_limits, contact, loops, scene
        )
        self.options: SimOptions | None = options
        self.spec = build_spec(model, self.contact_boxes, options)
        try:
            mjmodel = self.spec.compile()
        except ValueError as e:
            raise ModelError(f"MuJoCo rejected the model {model.name!r}: {e}") from None
        geoms: dict[str, tuple[str, ...]] = {
            b.frame: (f"{b.frame}_contact",) for b in self.contact_boxes + self.contact_spheres
        }
        if self.spec.hfields:
            geoms.update({b.frame: (f"{b.frame}_contact", *sole_corner_names(b.frame)) for b in self.contact_boxes})
        self._setup(mjmodel, geoms, None)
        self._check_layout()
        self.reset(neutral(self.tree) if self.cluster_model is None else self.cluster_model.neutral())

    @classmethod
    def from_mjcf(
        cls,
        source,
        model: Model | ClusterModel | None = None,
        *,
        contact_geoms: Mapping[str, Sequence[str]] | None = None,
        timestep: float | None = None,
    ) -> MujocoSim:
        """A simulation of the user's own MJCF, as written (see :mod:`wbc.sim.mjcf_scene`).

        Its geoms, contacts, options, solver settings and passive forces are the file's; wbc's joint
        torques reach MuJoCo through the file's torque motors (servos are replaced by torque motors,
        with a :class:`~wbc.sim.mjcf_scene.ServoReplacedWarning`).

        Args:
            source: a path, MJCF text, a ``mujoco.MjSpec`` (copied) or a ``mujoco.MjModel``.
            model: the wbc model of the file (default ``wbc.load_mjcf(source)``).
            contact_geoms: for :meth:`contact_forces`, the file's geoms (names) whose contacts count
                for each foot frame.
            timestep: s, instead of the file's ``<option timestep>`` (the only setting changed).

        Raises:
            ModelError: a file MuJoCo rejects, or that wbc cannot represent. InputError: ``model`` is
                not the file's, an unknown geom, a bad time step.
        """
        from ..model.mjcf import load_mjcf
        from .mjcf_scene import user_scene

        model = load_mjcf(source) if model is None else model
        scene = user_scene(source, model)
        self = cls.__new__(cls)
        self.contact_boxes, self.contact_spheres, self.options = (), (), None
        self.model = model
        self.cluster_model = model if isinstance(model, ClusterModel) else None
        self.tree = model.tree if isinstance(model, ClusterModel) else model
        self.spec = scene.spec
        if timestep is not None:
            if not (np.isfinite(timestep) and timestep > 0):
                raise InputError(f"timestep must be positive and finite, got {timestep!r}")
            if self.spec is None:
                raise InputError(f"{scene.where}: a compiled MjModel's time step cannot be changed here")
            self.spec.option.timestep = float(timestep)
        try:
            mjmodel = scene.mjmodel if self.spec is None else self.spec.compile()
        except ValueError as e:
            raise ModelError(f"{scene.where}: MuJoCo rejected the scene: {e}") from None
        ctrl = np.zeros((mjmodel.nu, len(scene.drives)))
        for k, drive in enumerate(scene.drives):
            for key, c in drive:
                ctrl[key if isinstance(key, int) else mjmodel.actuator(key).id, k] += c
        self._setup(mjmodel, dict(contact_geoms or {}), ctrl)
        adr, _ = qpos_layout(self.tree)
        for i, j in enumerate(self.tree.joints[1:], start=1):
            if mjmodel.jnt_qposadr[i - 1] != adr[i] or mjmodel.jnt_dofadr[i - 1] != j.idx_v:
                raise InputError(f"{scene.where}: joint {j.name!r} of {model.name!r} is not the file's")
        q0 = q_from_qpos(self.tree, mjmodel.qpos0)
        self.reset(
            q0
            if self.cluster_model is None
            else self.cluster_model.spanning_configuration(self.cluster_model.independent_configuration(q0), q0)
        )
        return self

    def _setup(self, mjmodel, contact_geoms: Mapping[str, Sequence[str]], ctrl: np.ndarray | None) -> None:
        """Data, contact geoms, the body of each joint, the input map (None: one actuator per input)."""
        self.mjmodel = mjmodel
        self.mjdata = mujoco.MjData(mjmodel)
        self._box_geoms: dict[str, tuple[int, ...]] = {}
        for frame, names in contact_geoms.items():
            self.tree.frame_id(frame)
            try:
                self._box_geoms[frame] = tuple(mjmodel.geom(n).id for n in names)
            except KeyError:
                raise InputError(f"contact geoms of {frame!r}: the scene has no geom among {list(names)}") from None
        self._ctrl = ctrl
        if ctrl is not None and ctrl.shape[1] != self.n_inputs:
            raise ModelError(f"{self.model.name!r}: {ctrl.shape[1]} drives for {self.n_inputs} inputs (internal error)")
        self._joint_body = self._bodies_of_joints()
        self._pushes: list[_Push] = []
        self._M = np.zeros((self.tree.nv, self.tree.nv))
        self._residuals = None if self.cluster_model is None else _residual_function(self.cluster_model)
        self._stale = True
        self._warnings = dict.fromkeys(_BAD_STATE, 0)

    def _bodies_of_joints(self) -> dict[int, int]:
        """MuJoCo body of each tree joint whose frame is a body's (a generated scene: by the link's
        name; a user's file: the body of the last of its joints)."""
        m, out = self.mjmodel, {}
        if self._ctrl is None:
            for i, j in enumerate(self.tree.joints[1:], start=1):
                try:
                    out[i] = m.body(j.link).id
                except KeyError:
                    continue  # a massless body merged into its child
            return out
        for i in range(1, self.tree.njoints):
            b = int(m.jnt_bodyid[i - 1])
            if i - 1 == int(m.body_jntadr[b]) + int(m.body_jntnum[b]) - 1:
                out[i] = b
        return out

    @property
    def n_inputs(self) -> int:
        """Number of actuators: the model's actuated joints, or a clustered model's motors."""
        return self.tree.n_actuated if self.cluster_model is None else self.cluster_model.n_motors

    def _check_layout(self) -> None:
        adr, nq_mj = qpos_layout(self.tree)
        m = self.mjmodel
        if m.nq != nq_mj or m.nv != self.tree.nv or m.nu != self.n_inputs:
            raise ModelError(f"MuJoCo model of {self.model.name!r} has an unexpected size (internal error)")
        for i, j in enumerate(self.tree.joints[1:], start=1):
            mj = m.joint(j.name)
            if mj.qposadr[0] != adr[i] or mj.dofadr[0] != j.idx_v:
                raise ModelError(f"joint {j.name!r}: MuJoCo laid it out differently from wbc (internal error)")

    # ------------------------------------------------------------------------------- state
    @property
    def time(self) -> float:
        """Simulated time, s."""
        return float(self.mjdata.time)

    @property
    def timestep(self) -> float:
        """Integration step, s."""
        return float(self.mjmodel.opt.timestep)

    def reset(self, q, v=None) -> None:
        """Time 0, zero torques, no pushes, state ``(q, v)`` (``v`` default zero)."""
        mujoco.mj_resetData(self.mjmodel, self.mjdata)
        self._warnings = dict.fromkeys(_BAD_STATE, 0)
        self._pushes.clear()
        self.set_state(q, v, time=0.0)

    def get_state(self) -> tuple[np.ndarray, np.ndarray]:
        """The current wbc state: ``q`` (nq,), ``v`` (nv,); for a clustered model the spanning
        configuration ``y`` (tree.nq) and the independent velocity ``v`` (nv,) (``ẏ``'s independent
        entries: exact, since ``G`` has identity rows there)."""
        q = q_from_qpos(self.tree, self.mjdata.qpos)
        v = v_from_qvel(self.tree, q, self.mjdata.qvel)
        if self.cluster_model is not None:
            v = v[self.cluster_model.independent_v_indices]
        return q, v

    def get_spanning_state(self) -> tuple[np.ndarray, np.ndarray]:
        """The spanning tree's state ``(y, ẏ)`` (tree.nq,), (tree.nv,), as MuJoCo integrates it."""
        q = q_from_qpos(self.tree, self.mjdata.qpos)
        return q, v_from_qvel(self.tree, q, self.mjdata.qvel)

    def loop_error(self) -> float:
        """Largest residual of the clustered model's loop closures at the current state, m (or rad
        for weld rows); 0 for a tree."""
        return self._constraint_errors()[0]

    def coupling_error(self) -> float:
        """Largest residual of the clustered model's joint couplings (gears, belts) at the current
        state, rad (or m); 0 for a tree."""
        return self._constraint_errors()[1]

    def _constraint_errors(self) -> tuple[float, float]:
        if self._residuals is None:
            return 0.0, 0.0
        y = q_from_qpos(self.tree, self.mjdata.qpos)
        loop, coupling = self._residuals(y)
        return float(np.max(np.abs(np.asarray(loop)), initial=0.0)), float(
            np.max(np.abs(np.asarray(coupling)), initial=0.0)
        )

    def center_of_mass(self) -> np.ndarray:
        """Centre of mass (3,) of the whole robot at the current state, world, m (MuJoCo's)."""
        self._fresh()
        return np.array(self.mjdata.subtree_com[0])

    def set_state(self, q, v=None, time: float | None = None) -> None:
        """Set the state from wbc's ``q`` (nq,) and ``v`` (nv,) (default zero); optionally the time, s.

        Continuous joints keep their winding (the angle nearest the current one is used). Torque
        commands and pushes are kept.

        Raises:
            InputError: wrong sizes, non-finite values, non-unit quaternions or (cos, sin) pairs.
        """
        q = checks.configuration(self.tree, q)
        if self.cluster_model is not None:
            cm = self.cluster_model
            v = np.zeros(cm.nv) if v is None else checks.vector(v, cm.nv, "v")
            v = cm.spanning_velocity(q, v)
        else:
            v = np.zeros(self.tree.nv) if v is None else checks.velocity(self.tree, v)
        self.mjdata.qpos[:] = qpos_from_q(self.tree, q, reference=np.array(self.mjdata.qpos))
        self.mjdata.qvel[:] = qvel_from_v(self.tree, q, v)
        self.mjdata.qacc_warmstart[:] = 0.0
        if time is not None:
            self.mjdata.time = float(time)
        self.forward()

    def set_torques(self, tau) -> None:
        """Actuator torques (n_actuated,), N m or N, in ``model.actuated`` order; held until changed.

        With ``torque_limits`` MuJoCo clamps them to the effort limits.

        Raises:
            InputError: wrong size, non-finite entries or entries beyond 1e10.
        """
        tau = checks.vector(tau, self.n_inputs, "tau")
        ctrl = tau if self._ctrl is None else self._ctrl @ tau
        if np.any(np.abs(ctrl) >= _MAX_VALUE):
            raise InputError(f"tau has entries beyond {_MAX_VALUE:g}, which MuJoCo would replace by zero")
        self.mjdata.ctrl[:] = ctrl
        self._stale = True

    def step(self, n: int = 1) -> None:
        """Advance ``n`` time steps with the current torques, applying the active pushes."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise InputError(f"n must be a non-negative integer, got {n!r}")
        for _ in range(int(n)):
            if self._pushes:
                mujoco.mj_step1(self.mjmodel, self.mjdata)
                self._apply_pushes()
                mujoco.mj_step2(self.mjmodel, self.mjdata)
                self._expire_pushes()
            else:
                mujoco.mj_step(self.mjmodel, self.mjdata)
            self._stale = True
            self._check_finite()

    def _check_finite(self) -> None:
        for name in _BAD_STATE:
            w = self.mjdata.warning[int(getattr(mujoco.mjtWarning, name))]
            if w.number > self._warnings[name]:
                self._warnings[name] = w.number
                what = {"mjWARN_BADQPOS": "position", "mjWARN_BADQVEL": "velocity"}.get(name, "acceleration")
                vector = "MuJoCo qpos" if name == "mjWARN_BADQPOS" else "v"
                raise SimulationDiverged(
                    f"MuJoCo simulation of {self.model.name!r} diverged at t = {self.time:.4f} s: bad {what} "
                    f"(index {int(w.lastinfo)} of {vector}); lower the gains or the time step"
                )

    def forward(self) -> None:
        """Recompute MuJoCo's derived quantities (``mj_forward``) at the current state and commands."""
        if self._pushes:
            mujoco.mj_kinematics(self.mjmodel, self.mjdata)
            mujoco.mj_comPos(self.mjmodel, self.mjdata)
            self._apply_pushes()
        mujoco.mj_forward(self.mjmodel, self.mjdata)
        self._stale = False

    def _fresh(self) -> None:
        if self._stale:
            self.forward()

    # ------------------------------------------------------------------------------- pushes
    def apply_push(self, frame: str, force, duration: float, point=None) -> None:
        """Push the body carrying ``frame`` during the next ``duration`` s of simulation.

        Args:
            frame: a model frame.
            force: force (3,), N, world axes, constant during the push.
            duration: s; rounded to a whole number of steps, at least one.
            point: point of application (3,) in ``frame`` coordinates, m (default the frame
                origin); it moves with the body.

        Pushes go through ``mjdata.xfrc_applied`` (the force at the body's centre of mass plus the
        moment of the offset), which :meth:`step` overwrites while pushes are active.

        Raises:
            FrameError: unknown frame, or a frame on the fixed ground. InputError: bad force,
                point or duration.
        """
        fr = self.tree.frames[self.tree.frame_id(frame)]
        if fr.joint == 0:
            raise FrameError(f"frame {frame!r} is attached to the ground; pushing it does nothing")
        force = checks.vector(force, 3, "force")
        offset = np.zeros(3) if point is None else checks.vector(point, 3, "point")
        if not (isinstance(duration, (int, float, np.floating)) and np.isfinite(duration) and duration > 0):
            raise InputError(f"duration must be positive and finite, s; got {duration!r}")
        R = np.asarray(fr.placement.R, dtype=float)
        p_body = np.asarray(fr.placement.p, dtype=float).reshape(3) + R @ offset
        body = self._mj_body(fr.joint, frame)
        steps = max(1, int(round(duration / self.timestep)))
        self._pushes.append(_Push(body, p_body, force.copy(), steps))
        self._stale = True

    def clear_pushes(self) -> None:
        """Cancel every push and zero ``mjdata.xfrc_applied``."""
        self._pushes.clear()
        self.mjdata.xfrc_applied[:] = 0.0
        self._stale = True

    def _apply_pushes(self) -> None:
        d = self.mjdata
        d.xfrc_applied[:] = 0.0
        for push in self._pushes:
            b = push.body
            point = d.xpos[b] + d.xmat[b].reshape(3, 3) @ push.point
            d.xfrc_applied[b, 0:3] += push.force
            d.xfrc_applied[b, 3:6] += np.cross(point - d.xipos[b], push.force)

    def _expire_pushes(self) -> None:
        for push in self._pushes:
            push.steps_left -= 1
        self._pushes = [p for p in self._pushes if p.steps_left > 0]
        if not self._pushes:
            self.mjdata.xfrc_applied[:] = 0.0

    # ------------------------------------------------------------------------------- dynamics
    def mass_matrix(self) -> np.ndarray:
        """MuJoCo's mass matrix at the current state, in wbc coordinates: ``M(q)`` (nv, nv)."""
        self._fresh()
        q, _ = self.get_spanning_state()
        return mass_matrix_to_wbc(self.tree, q, self._mj_mass_matrix())

    def bias_forces(self) -> np.ndarray:
        """MuJoCo's bias forces at the current state, in wbc coordinates: ``h(q, v)`` (nv,), N / N m."""
        self._fresh()
        q, v = self.get_spanning_state()
        return bias_to_wbc(self.tree, q, v, self._mj_mass_matrix(), self.mjdata.qfrc_bias)

    def acceleration(self) -> np.ndarray:
        """MuJoCo's acceleration ``v̇`` (nv,) at the current state, torques, pushes and contacts, in
        wbc coordinates (m/s², rad/s²)."""
        self._fresh()
        q, v = self.get_spanning_state()
        return acceleration_to_wbc(self.tree, q, v, self.mjdata.qacc)

    def _mj_mass_matrix(self) -> np.ndarray:
        mujoco.mj_fullM(self.mjmodel, self.mjdata, self._M)
        return self._M.copy()

    # ------------------------------------------------------------------------------- readout
    def contact_forces(self) -> dict[str, np.ndarray]:
        """Total contact force (3,) the floor exerts on each sole box and point foot, N, world axes."""
        self._fresh()
        out = {name: np.zeros(3) for name in self._box_geoms}
        owner = {g: name for name, geoms in self._box_geoms.items() for g in geoms}
        f6 = np.zeros(6)
        d = self.mjdata
        for k in range(d.ncon):
            con = d.contact[k]
            # the contact frame's first row is the normal, from geom1 to geom2; f6 acts on geom2
            for geom, sign in ((con.geom2, 1.0), (con.geom1, -1.0)):
                if geom in owner:
                    mujoco.mj_contactForce(self.mjmodel, d, k, f6)
                    out[owner[geom]] += sign * (con.frame.reshape(3, 3).T @ f6[0:3])
        return out

    def normal_forces(self) -> dict[str, float]:
        """Vertical (world z) contact force on each sole box, N."""
        return {name: float(f[2]) for name, f in self.contact_forces().items()}

    def frame_placement(self, frame: str) -> np.ndarray:
        """Homogeneous transform (4, 4) of a model frame in the world, from MuJoCo's kinematics."""
        fr = self.tree.frames[self.tree.frame_id(frame)]
        self._fresh()
        if fr.joint == 0:
            R0, p0 = np.eye(3), np.zeros(3)
        else:
            b = self._mj_body(fr.joint, frame)
            R0, p0 = self.mjdata.xmat[b].reshape(3, 3), self.mjdata.xpos[b]
        T = np.eye(4)
        T[0:3, 0:3] = R0 @ np.asarray(fr.placement.R, dtype=float)
        T[0:3, 3] = p0 + R0 @ np.asarray(fr.placement.p, dtype=float).reshape(3)
        return T

    def _mj_body(self, joint: int, frame: str) -> int:
        """MuJoCo's id of the body of tree joint ``joint`` (FrameError for a merged massless body)."""
        try:
            return self._joint_body[joint]
        except KeyError:
            raise FrameError(
                f"frame {frame!r} is on the massless body {self.tree.joints[joint].link!r}, which MuJoCo "
                "merges into its child (or a joint inside a MuJoCo body)"
            ) from None

    def to_xml(self) -> str:
        """The generated model as MJCF text, to inspect it or open it in MuJoCo's viewer.

        MuJoCo prints numbers with 6 significant digits, so a model reloaded from this text is not
        exactly wbc's; the simulation itself uses the compiled spec at full precision.
        """
        return self.spec.to_xml()


def _closure_rows_of(cluster) -> list[int]:
    """Indices, in a declared cluster's residual, of its loop-closure rows (metres, radians)."""
    rows: list[int] = []
    n = 0
    for c in cluster.constraints:
        if isinstance(c, LoopClosure):
            k = len(c.rows) if c.rows is not None else (6 if c.kind is ClosureKind.WELD else 3)
            rows.extend(range(n, n + k))
            n += k
        else:
            n += 1
    return rows


def _residual_function(cm: ClusterModel):
    """``y -> (loop-closure residuals, coupling residuals)`` of every declared cluster (CasADi)."""
    import casadi as ca

    y = ca.SX.sym("y", cm.tree.nq)
    loops, couplings = [], []
    for k, c in enumerate(cm.infos):
        if c.declared is None:
            continue
        residual, _, _ = c.loop_functions()
        r = residual(cm.cluster_coordinates(k, y))
        rows = _closure_rows_of(c.declared)
        others = [i for i in range(r.shape[0]) if i not in rows]
        loops += [r[i] for i in rows]
        couplings += [r[i] for i in others]
    return ca.Function("residuals", [y], [ca.vertcat(*loops, 0), ca.vertcat(*couplings, 0)])
