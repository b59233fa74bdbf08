"""How far apart a robot's legs are, measured on its own collision geometry by MuJoCo.

The crossover walker keeps its legs apart with capsules (:func:`wbc.sim.walking.leg_collision_pairs`:
one capsule around each ``<collision>`` element of the legs' links, shrunk where two overlap
standing). :class:`LegClearance` measures what those capsules stand for, independently of wbc's
distance code: every ``<collision>`` element of one leg's links (:func:`wbc.sim.walking.leg_links`)
against every one of the other's, as written in the URDF (:func:`wbc.control.limits.collision_shapes`:
spheres, boxes and cylinders as such, meshes with their ``scale`` and origin), as MuJoCo geoms on a
kinematic copy of the robot, their signed distance by ``mujoco.mj_geomDistance`` (MuJoCo collides a
mesh as its convex hull, which contains the mesh: a positive distance means the meshes do not touch;
a negative one is the hulls' penetration depth).

MuJoCo is the optional ``sim`` extra; ``import wbc`` never imports this module.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

import wbc
from wbc.control.limits import CollisionShape, ShapeKind, collision_shapes

from .catalog import LeggedRobot
from .mujoco import SimOptions, build_spec, qpos_from_q

__all__ = ["Clearance", "LegClearance"]

#: Distances beyond this (m) are reported as this: the legs are far apart.
FAR = 1.0


@dataclasses.dataclass(frozen=True)
class Clearance:
    """The nearest pair of the legs' collision elements: their signed distance (m; negative: the
    hulls overlap by that much) and their links (first leg's, second leg's)."""

    distance: float
    links: tuple[str, str]


class LegClearance:
    """The signed distance between a robot's two legs (see the module docstring).

    Args:
        robot: a legged robot of the catalog (:func:`wbc.sim.catalog.legged_robot`): its model,
            URDF and feet.

    Raises:
        ModelError: a leg's links have no collision elements (naming them), or the URDF's are
            unreadable.
    """

    def __init__(self, robot: LeggedRobot) -> None:
        from .walking import leg_links  # walking imports this module lazily (its walkers measure)

        model = robot.model
        legs = leg_links(robot)
        shapes = [s for s in collision_shapes(model, robot.urdf) if s.link in legs[0] | legs[1]]
        for leg in legs:
            if not any(s.link in leg for s in shapes):
                raise wbc.ModelError(f"robot {robot.name!r}: no collision elements on its leg links {sorted(leg)}")
        spec = build_spec(model, options=SimOptions(floor=False, position_limits=False, torque_limits=False))
        bodies = {b.name: b for b in spec.bodies}
        names = []
        for k, shape in enumerate(shapes):
            names.append(f"leg_shape_{k}")
            _add_geom(spec, bodies, model, shape, names[-1])
        self.model = model
        self.mjmodel = spec.compile()
        self.mjdata = mujoco.MjData(self.mjmodel)
        self._fromto = np.zeros(6)  # mj_geomDistance's witness segment (unused, written per call)
        ids = [self.mjmodel.geom(n).id for n in names]
        self._pairs = [
            (ids[a], ids[b], shapes[a].link, shapes[b].link)
            for a in range(len(shapes))
            for b in range(len(shapes))
            if shapes[a].link in legs[0] and shapes[b].link in legs[1]
        ]

    def __call__(self, q) -> Clearance:
        """The nearest pair at configuration ``q`` (nq,)."""
        self.mjdata.qpos[:] = qpos_from_q(self.model, np.asarray(q, dtype=float))
        mujoco.mj_kinematics(self.mjmodel, self.mjdata)
        best = Clearance(FAR, ("", ""))
        for a, b, first, second in self._pairs:
            d = float(mujoco.mj_geomDistance(self.mjmodel, self.mjdata, a, b, FAR, self._fromto))
            if d < best.distance:
                best = Clearance(d, (first, second))
        return best


def _add_geom(spec, bodies: dict, model: wbc.Model, shape: CollisionShape, name: str) -> None:
    """Add ``shape`` to its body of a spec built by ``build_spec``, colliding with nothing (it only
    measures). A mesh's vertices go in the body's frame (MuJoCo re-centres a mesh on its own frame and
    places the geom to match)."""
    frame = model.frames[model.frame_id(shape.link)]
    body = bodies[model.joints[frame.joint].link] if frame.joint > 0 else bodies["world"]
    R_link, p_link = np.asarray(frame.placement.R, float), np.asarray(frame.placement.p, float).reshape(3)
    R, p = R_link @ shape.rotation, R_link @ shape.position + p_link
    if shape.kind is ShapeKind.MESH:
        assert shape.vertices is not None
        spec.add_mesh(name=name, uservert=(shape.vertices @ R.T + p).reshape(-1).tolist())
        geom = body.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_MESH, meshname=name)
    else:
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, R.reshape(-1))
        if shape.kind is ShapeKind.SPHERE:
            kind, size = mujoco.mjtGeom.mjGEOM_SPHERE, [shape.size[0], 0.0, 0.0]
        elif shape.kind is ShapeKind.BOX:
            kind, size = mujoco.mjtGeom.mjGEOM_BOX, [0.5 * x for x in shape.size]
        else:
            kind, size = mujoco.mjtGeom.mjGEOM_CYLINDER, [shape.size[0], 0.5 * shape.size[1], 0.0]
        geom = body.add_geom(name=name, type=kind, size=size, pos=p, quat=quat)
    geom.contype, geom.conaffinity, geom.mass = 0, 0, 0.0
