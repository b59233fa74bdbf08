"""The legs' clearance on their own collision geometry (wbc.sim.leg_clearance): the URDF's shapes as
written (collision_shapes), MuJoCo's distance between them, and the capsules that bound them.

Oracle: MuJoCo's ``mj_geomDistance`` on the URDF's elements themselves (meshes as their convex
hulls). Each capsule of ``collision_primitives`` contains its element, so the capsules never put two
legs farther apart than MuJoCo does: a misplaced, unscaled or unmirrored mesh breaks that.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import wbc
from wbc.control.limits import ShapeKind, collision_primitives, collision_shapes, pair_distances

pytest.importorskip("mujoco")
from wbc.sim import catalog
from wbc.sim.leg_clearance import LegClearance
from wbc.sim.walking import leg_links


@pytest.fixture(scope="module")
def talos():
    return catalog.legged_robot("talos", "walk")


@pytest.fixture(scope="module")
def g1():
    return catalog.legged_robot("g1", "walk")


def test_shapes_are_the_urdfs_elements_with_their_scale_and_bounds_contain_them(talos):
    """Talos's right thigh is its left one mirrored by the URDF's ``scale="1 -1 1"``; every mesh's
    bound (a capsule, or a sphere for a compact one) contains each of its vertices."""
    shapes = {s.link: s for s in collision_shapes(talos.model, talos.urdf)}
    left, right = shapes["leg_left_3_link"], shapes["leg_right_3_link"]
    assert left.kind is ShapeKind.MESH and right.vertices is not None and left.vertices is not None
    np.testing.assert_array_equal(right.vertices, left.vertices * np.array([1.0, -1.0, 1.0]))
    for shape in shapes.values():
        if shape.kind is not ShapeKind.MESH:
            continue
        capsule, points = shape.bound(), shape.vertices @ shape.rotation.T + shape.position
        a, b = capsule.points[0], capsule.points[-1]  # a sphere: one point
        u = np.clip((points - a) @ (b - a) / max(float((b - a) @ (b - a)), 1e-18), 0.0, 1.0)
        nearest = a + u[:, None] * (b - a)
        assert np.max(np.linalg.norm(points - nearest, axis=1)) <= capsule.radius + 1e-9, shape.link


@pytest.mark.parametrize("name", ["talos", "g1"])
def test_the_capsules_never_put_the_legs_farther_apart_than_mujoco_does(name, request):
    """Random postures around standing (the legs apart, close and crossing): the nearest capsule
    pair of the legs (unshrunk bounds) is never farther than MuJoCo's nearest pair of the elements."""
    robot = request.getfixturevalue(name)
    clearance = LegClearance(robot)
    legs = leg_links(robot)
    prims = [p for p in collision_primitives(robot.model, robot.urdf) if p.frame in legs[0] | legs[1]]
    pairs = [wbc.CollisionPair(a, b) for a in prims for b in prims if a.frame in legs[0] and b.frame in legs[1]]
    rng = np.random.default_rng(3)
    seen = []
    for _ in range(25):
        q = robot.q0.copy()
        q[7:] += rng.normal(0.0, 0.35, len(q) - 7)
        measured = clearance(q).distance
        seen.append(measured)
        assert pair_distances(robot.model, q, pairs).min() <= measured + 1e-6
    assert min(seen) < 0 < max(seen), "the postures include overlapping and separate legs"


def test_standing_legs_are_apart_and_legs_pushed_into_each_other_overlap(talos):
    """Talos standing: its thighs' meshes are about 1 cm apart (the tightest pair). Both hips rolled
    inward (the left leg's roll negative, the right's positive), the legs overlap and the nearest
    pair names a link of each leg."""
    standing = LegClearance(talos)(talos.q0)
    assert 0.0 < standing.distance < 0.03
    assert standing.links == ("leg_left_3_link", "leg_right_3_link")
    q = talos.q0.copy()
    for joint, angle in (("leg_left_2_joint", -0.4), ("leg_right_2_joint", 0.4)):
        q[talos.model.joints[talos.model.joint_id(joint)].idx_q] = angle
    crossed = LegClearance(talos)(q)
    legs = leg_links(talos)
    assert crossed.distance < -0.02
    assert crossed.links[0] in legs[0] and crossed.links[1] in legs[1]


def test_legs_without_collision_elements_are_refused_by_name(talos, tmp_path):
    text = re.sub(r"<collision>.*?</collision>", "", talos.urdf.read_text(), flags=re.S)
    bare = tmp_path / "talos_without_collisions.urdf"
    bare.write_text(text)
    with pytest.raises(wbc.ModelError, match=r"robot 'talos': no collision elements on its leg links \['leg_left"):
        LegClearance(dataclasses.replace(talos, urdf=bare))
