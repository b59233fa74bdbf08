"""Pinocchio as an oracle: the same robots, constraints and quantities on Pinocchio's side.

Used by the tests (cross-validation) and the benchmarks (side-by-side timing); wbc itself never
imports Pinocchio. Everything here builds Pinocchio's model from the very file (or text) wbc
loaded, adds the catalog's extra frames from the catalog's own numbers, and converts between the
two libraries' conventions (external forces per joint, ±max-double limits, upper-triangle-only
matrices, LOCAL versus world-aligned constraint blocks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import casadi as ca
import numpy as np
import pinocchio as pin

import wbc
from wbc.robots import RobotSpec

__all__ = [
    "REFERENCE",
    "build_model",
    "catalog_model",
    "add_op_frame",
    "frame_id",
    "limit",
    "symmetrized",
    "external_forces",
    "constraint_jacobian",
    "minverse",
    "delassus_call",
    "minv_b_calls",
    "cluster_model",
    "loop_constraints",
    "kkt",
    "kkt_inverse",
    "kkt_forward_dynamics",
    "kkt_inverse_dynamics",
    "contact_jacobian",
    "loop_constraint_models",
    "constraint_dynamics_call",
    "relative_error",
    "oracle_errors",
    "from_wbc",
]

#: Pinocchio's reference frames by wbc's.
REFERENCE = {
    wbc.ReferenceFrame.LOCAL: pin.LOCAL,
    wbc.ReferenceFrame.WORLD: pin.WORLD,
    wbc.ReferenceFrame.LOCAL_WORLD_ALIGNED: pin.LOCAL_WORLD_ALIGNED,
}


def build_model(urdf, floating_base: bool, from_text: bool = False) -> pin.Model:
    """Pinocchio's model of a URDF file (or text), with a free-flyer root when ``floating_base``."""
    if from_text:
        return pin.buildModelFromXML(urdf, pin.JointModelFreeFlyer()) if floating_base else pin.buildModelFromXML(urdf)
    path = str(urdf)
    return pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating_base else pin.buildModelFromUrdf(path)


def add_op_frame(pm: pin.Model, name: str, parent: str, offset: Sequence[float]) -> int:
    """Add an OP frame ``name`` at ``offset`` (m) in frame ``parent``; returns its id."""
    pid = frame_id(pm, parent)
    pf = pm.frames[pid]
    placement = pf.placement * pin.SE3(np.eye(3), np.asarray(offset, float))
    return pm.addFrame(pin.Frame(name, pf.parentJoint, pid, placement, pin.FrameType.OP_FRAME))


def catalog_model(spec: RobotSpec) -> pin.Model:
    """Pinocchio's model of a catalog robot: its URDF (a free flyer where the wbc model has one),
    reduced by ``buildReducedModel`` where the catalog locked joints (``spec.locked``), plus the
    catalog's extra OP frames, so every frame wbc knows exists on both sides."""
    pm = build_model(spec.urdf, spec.model.floating_base)
    if spec.locked:
        q = pin.neutral(pm)
        for name, value in spec.locked:
            j = pm.joints[pm.getJointId(name)]
            q[j.idx_q : j.idx_q + j.nq] = value
        pm = pin.buildReducedModel(pm, [pm.getJointId(name) for name, _ in spec.locked], q)
    for name, parent, offset in spec.extra_frames:
        add_op_frame(pm, name, parent, offset)
    return pm


def frame_id(pm: pin.Model, name: str) -> int:
    """The id of frame ``name``; KeyError when Pinocchio's model has none."""
    if not pm.existFrame(name):
        raise KeyError(f"Pinocchio model {pm.name!r} has no frame {name!r}")
    return pm.getFrameId(name)


def limit(x) -> np.ndarray:
    """Pinocchio's limits with its ±max-double sentinels turned into ±inf."""
    x = np.array(x, dtype=float)
    x[x >= 1e308] = np.inf
    x[x <= -1e308] = -np.inf
    return x


def symmetrized(M: np.ndarray) -> np.ndarray:
    """A symmetric matrix from the upper triangle of ``M`` (Pinocchio's CRBA and M⁻¹ fill only that)."""
    return np.triu(M) + np.triu(M, 1).T


def external_forces(pm: pin.Model, fext: Mapping[str, np.ndarray]) -> pin.StdVec_Force:
    """wbc's ``{frame: LOCAL wrench [f; n]}`` as Pinocchio's per-joint forces in the joint frames."""
    out = [pin.Force.Zero() for _ in range(pm.njoints)]
    for name, w in fext.items():
        frame = pm.frames[frame_id(pm, name)]
        out[frame.parentJoint] = out[frame.parentJoint] + frame.placement.act(pin.Force(np.asarray(w, dtype=float)))
    forces = pin.StdVec_Force()
    for f in out:
        forces.append(f)
    return forces


def _offset(c) -> np.ndarray:
    return np.asarray(getattr(c, "offset", (0.0, 0.0, 0.0)), float)


def constraint_jacobian(pm: pin.Model, q: np.ndarray, constraints) -> np.ndarray:
    """The stacked rows (m, nv) of wbc constraints, from their definitions: a point is rows 0-2 of
    the Jacobian of ``frame.placement * SE3(I, offset)`` in its reference, a weld the frame's 6D
    ``LOCAL_WORLD_ALIGNED`` Jacobian, a link constraint ``rows @ J(frame, reference)``."""
    pd = pm.createData()
    pin.computeJointJacobians(pm, pd, q)
    blocks = []
    for c in constraints:
        frame = pm.frames[frame_id(pm, c.frame)]
        if isinstance(c, wbc.PointConstraint):
            point = frame.placement * pin.SE3(np.eye(3), _offset(c))
            blocks.append(pin.getFrameJacobian(pm, pd, frame.parentJoint, point, REFERENCE[c.reference])[:3])
        elif isinstance(c, wbc.WeldConstraint):
            blocks.append(pin.getFrameJacobian(pm, pd, frame.parentJoint, frame.placement, pin.LOCAL_WORLD_ALIGNED))
        else:
            J = pin.getFrameJacobian(pm, pd, frame.parentJoint, frame.placement, REFERENCE[c.reference])
            blocks.append(np.asarray(c.rows, dtype=float) @ J)
    return np.vstack(blocks) if blocks else np.zeros((0, pm.nv))


def minverse(pm: pin.Model, q: np.ndarray) -> np.ndarray:
    """M⁻¹ (nv, nv) by ``computeMinverse``, symmetrized."""
    return symmetrized(pin.computeMinverse(pm, pm.createData(), q))


def _block_diag(blocks: Sequence[np.ndarray]) -> np.ndarray:
    n = sum(b.shape[0] for b in blocks)
    out = np.zeros((n, n))
    k = 0
    for b in blocks:
        out[k : k + b.shape[0], k : k + b.shape[0]] = b
        k += b.shape[0]
    return out


def delassus_call(
    pm: pin.Model, constraints, q: np.ndarray
) -> tuple[Callable[[], np.ndarray], Callable[[np.ndarray], np.ndarray]]:
    """``(call, rotate)``: ``call()`` runs ``computeDelassusMatrix`` on 3D/6D rigid constraints in
    LOCAL frames (points and welds only); ``rotate(D)`` turns its result into wbc's world-aligned
    rows (``R D Rᵀ`` block-wise)."""
    cmodels = []
    for c in constraints:
        frame = pm.frames[frame_id(pm, c.frame)]
        placement = frame.placement * pin.SE3(np.eye(3), _offset(c))
        kind = pin.ContactType.CONTACT_6D if isinstance(c, wbc.WeldConstraint) else pin.ContactType.CONTACT_3D
        cmodels.append(pin.RigidConstraintModel(kind, pm, frame.parentJoint, placement, pin.LOCAL))
    models = pin.StdVec_RigidConstraintModel(cmodels)
    datas = pin.StdVec_RigidConstraintData([cm.createData() for cm in cmodels])
    pd = pm.createData()
    pin.initConstraintDynamics(pm, pd, models, datas)

    def call() -> np.ndarray:
        return pin.computeDelassusMatrix(pm, pd, q, models, datas, 0.0)

    def rotate(D: np.ndarray) -> np.ndarray:
        check = pm.createData()
        pin.forwardKinematics(pm, check, q)
        blocks = []
        for cm, c in zip(cmodels, constraints):
            R = (check.oMi[cm.joint1_id] * cm.joint1_placement).rotation
            blocks.append(np.kron(np.eye(2), R) if isinstance(c, wbc.WeldConstraint) else R)
        Rb = _block_diag(blocks)
        return Rb @ D @ Rb.T

    return call, rotate


def minv_b_calls(
    pm: pin.Model, model: wbc.Model, constraints, q: np.ndarray, frame_prefix: str | None = "bench_point"
) -> dict[str, Callable[[], np.ndarray]]:
    """Pinocchio's ``M⁻¹ B`` with ``B = [Sᵀ, Jᵀ]`` (``J`` the world-aligned linear rows of each point
    constraint, the ``LOCAL_WORLD_ALIGNED`` Jacobian of each weld), two ways:

    ``minv@B``: ``computeMinverse``, symmetrized, times ``B`` precomputed (skipped when ``B = I``);
    ``minv+jac@B``: the same with the contact Jacobians computed in the call. Adds one OP frame per
    constraint to ``pm`` (named ``{frame_prefix}_{k}``).
    """
    frame_ids = [add_op_frame(pm, f"{frame_prefix}_{k}", c.frame, _offset(c)) for k, c in enumerate(constraints)]
    pd = pm.createData()
    S = model.actuation_matrix()
    n_act = S.shape[1]
    dims = [c.dim for c in constraints]
    B = np.zeros((model.nv, n_act + sum(dims)))
    B[:, :n_act] = S
    il = np.tril_indices(model.nv, -1)

    def jacobian_columns(out: np.ndarray) -> None:
        pin.computeJointJacobians(pm, pd, q)
        col = n_act
        for fid, d in zip(frame_ids, dims):
            J = pin.getFrameJacobian(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)
            out[:, col : col + d] = J[:d].T
            col += d

    jacobian_columns(B)
    identity = B.shape[0] == B.shape[1] and np.array_equal(B, np.eye(B.shape[0]))
    work = B.copy()

    def minv() -> np.ndarray:
        M = pin.computeMinverse(pm, pd, q)
        M[il] = M.T[il]
        return M

    def minv_b() -> np.ndarray:
        M = minv()
        return M if identity else M @ B

    def minv_jac_b() -> np.ndarray:
        M = minv()
        jacobian_columns(work)
        return M @ work

    calls = {"minv@B": minv_b}
    if constraints:
        calls["minv+jac@B"] = minv_jac_b
    return calls


# ------------------------------------------------------------------ clustered models (loops, transmissions)
def cluster_model(cm: wbc.ClusterModel) -> pin.Model:
    """Pinocchio's model of a clustered model's spanning tree (from the same URDF text, else from the
    wbc tree itself: :func:`from_wbc`)."""
    pm = from_wbc(cm.tree) if cm.urdf is None else build_model(cm.urdf, cm.floating_base, from_text=True)
    if cm.armature is not None:
        pm.armature = np.asarray(cm.armature, dtype=float)
    return pm


def _vidx(pm: pin.Model, joint: str) -> int:
    return pm.joints[pm.getJointId(joint)].idx_v


def loop_constraints(pm: pin.Model, cm: wbc.ClusterModel, y: np.ndarray, yd: np.ndarray):
    """``(K, Kd_yd)``: the declared loop constraints of ``cm`` rebuilt on Pinocchio's side.

    Couplings give their constant rows (polynomials their derivative); loop closures the rows of
    Pinocchio's frame Jacobians (``R_aᵀ (J_a − J_b)``, translations, and rotations for welds) and
    their drift from Pinocchio's classical frame accelerations at zero joint acceleration. Nothing
    of wbc's own G, K or kinematics is used.
    """
    from wbc.model.clusters import JointCoupling, LoopClosure, PolynomialCoupling

    pd = pm.createData()
    pin.forwardKinematics(pm, pd, y, yd, np.zeros(pm.nv))
    pin.computeJointJacobians(pm, pd, y)
    pin.updateFramePlacements(pm, pd)
    rows, drifts = [], []
    for cluster in cm.clusters:
        for c in cluster.constraints:
            if isinstance(c, JointCoupling):
                r = np.zeros(pm.nv)
                r[_vidx(pm, c.joint)] += 1.0
                for src, ratio in c.sources:
                    r[_vidx(pm, src)] -= ratio
                rows.append(r)
                drifts.append(0.0)
            elif isinstance(c, PolynomialCoupling):
                r = np.zeros(pm.nv)
                s = _vidx(pm, c.source)
                x, xd = y[pm.joints[pm.getJointId(c.source)].idx_q], yd[s]
                d1 = sum(p * cp * x ** (p - 1) for p, cp in enumerate(c.coefficients) if p >= 1)
                d2 = sum(p * (p - 1) * cp * x ** (p - 2) for p, cp in enumerate(c.coefficients) if p >= 2)
                r[_vidx(pm, c.joint)] += 1.0
                r[s] -= d1
                rows.append(r)
                drifts.append(-d2 * xd * xd)
            elif isinstance(c, LoopClosure):
                fa, fb = frame_id(pm, c.frame_a), frame_id(pm, c.frame_b)
                Ra = pd.oMf[fa].rotation
                Ja = pin.getFrameJacobian(pm, pd, fa, pin.LOCAL_WORLD_ALIGNED)
                Jb = pin.getFrameJacobian(pm, pd, fb, pin.LOCAL_WORLD_ALIGNED)
                aa = pin.getFrameClassicalAcceleration(pm, pd, fa, pin.LOCAL_WORLD_ALIGNED)
                ab = pin.getFrameClassicalAcceleration(pm, pd, fb, pin.LOCAL_WORLD_ALIGNED)
                full = [Ra.T @ (Ja[0:3] - Jb[0:3])]
                drift = [Ra.T @ (aa.linear - ab.linear)]
                if c.kind.value == "weld":
                    full.append(Ra.T @ (Jb[3:6] - Ja[3:6]))
                    drift.append(Ra.T @ (ab.angular - aa.angular))
                K = np.vstack(full)
                d = np.concatenate(drift)
                sel = list(range(K.shape[0])) if c.rows is None else list(c.rows)
                rows.extend(K[sel])
                drifts.extend(d[sel])
    K = np.array(rows).reshape(-1, pm.nv)
    return K, np.array(drifts, dtype=float)


def kkt(pm: pin.Model, cm: wbc.ClusterModel, y: np.ndarray, yd: np.ndarray):
    """``(H, h, K, Kd_yd)`` from Pinocchio: the spanning tree's inertia and bias, the loop rows."""
    pd = pm.createData()
    H = symmetrized(pin.crba(pm, pd, y))
    h = pin.nonLinearEffects(pm, pm.createData(), y, yd)
    K, drift = loop_constraints(pm, cm, y, yd)
    return H, h, K, drift


def kkt_inverse(H: np.ndarray, K: np.ndarray) -> np.ndarray:
    """The top-left block ``P`` (nv, nv) of ``[H Kᵀ; K 0]⁻¹``: ``G (Gᵀ H G)⁻¹ Gᵀ`` for any basis
    ``G`` of the null space of ``K``, computed without one."""
    n, m = H.shape[0], K.shape[0]
    A = np.block([[H, K.T], [K, np.zeros((m, m))]])
    return np.linalg.solve(A, np.vstack([np.eye(n), np.zeros((m, n))]))[:n]


def kkt_forward_dynamics(pm: pin.Model, cm: wbc.ClusterModel, y, yd, tau_span) -> np.ndarray:
    """Spanning accelerations ``ÿ`` (nv) of ``[H Kᵀ; K 0][ÿ; −λ] = [τ − h; −K̇ẏ]`` (Pinocchio's H, h)."""
    H, h, K, drift = kkt(pm, cm, y, yd)
    n, m = H.shape[0], K.shape[0]
    A = np.block([[H, K.T], [K, np.zeros((m, m))]])
    return np.linalg.solve(A, np.concatenate([tau_span - h, -drift]))[:n]


def kkt_inverse_dynamics(pm: pin.Model, cm: wbc.ClusterModel, y, yd, qdd: np.ndarray) -> np.ndarray:
    """Independent generalized forces (nv_ind) producing independent accelerations ``qdd``.

    The spanning accelerations follow from ``K ÿ = −K̇ẏ`` with ``ÿ_ind = qdd``; the spanning
    forces ``H ÿ + h`` (Pinocchio's RNEA) are split into loop forces ``Kᵀλ`` carrying all of the
    dependent joints' share and the independent joints' generalized forces.
    """
    K, drift = loop_constraints(pm, cm, y, yd)
    ind = np.asarray(cm.independent_v_indices)
    dep = np.setdiff1d(np.arange(pm.nv), ind)
    ydd = np.zeros(pm.nv)
    ydd[ind] = qdd
    if dep.size:
        ydd[dep] = np.linalg.solve(K[:, dep], -drift - K[:, ind] @ qdd)
    r = pin.rnea(pm, pm.createData(), y, yd, ydd)
    if not dep.size:
        return r[ind]
    lam = np.linalg.solve(K[:, dep].T, r[dep])
    return r[ind] - K[:, ind].T @ lam


def contact_jacobian(pm: pin.Model, y: np.ndarray, points) -> np.ndarray:
    """Stacked world-aligned linear Jacobians (3k, nv) of ``(frame, offset)`` points (spanning tree)."""
    pd = pm.createData()
    pin.computeJointJacobians(pm, pd, y)
    blocks = []
    for frame, offset in points:
        f = pm.frames[frame_id(pm, frame)]
        placement = f.placement * pin.SE3(np.eye(3), np.asarray(offset, float))
        blocks.append(pin.getFrameJacobian(pm, pd, f.parentJoint, placement, pin.LOCAL_WORLD_ALIGNED)[:3])
    return np.vstack(blocks)


def loop_constraint_models(pm: pin.Model, cm: wbc.ClusterModel):
    """Pinocchio ``RigidConstraintModel`` s of ``cm``'s loop closures (all of them POINT or WELD with
    every row: ``CONTACT_3D`` / ``CONTACT_6D`` between the two frames), for ``constraintDynamics``."""
    from wbc.model.clusters import LoopClosure

    models = []
    for cluster in cm.clusters:
        for c in cluster.constraints:
            if isinstance(c, LoopClosure):
                fa, fb = pm.frames[frame_id(pm, c.frame_a)], pm.frames[frame_id(pm, c.frame_b)]
                kind = pin.ContactType.CONTACT_6D if c.kind.value == "weld" else pin.ContactType.CONTACT_3D
                models.append(
                    pin.RigidConstraintModel(
                        kind, pm, fa.parentJoint, fa.placement, fb.parentJoint, fb.placement, pin.LOCAL
                    )
                )
    return models


def constraint_dynamics_call(pm: pin.Model, models, y, yd, tau, prox=None):
    """``(call, datas)``: ``call()`` runs ``constraintDynamics`` with the loop-closure ``models``."""
    cms = pin.StdVec_RigidConstraintModel(models)
    cds = pin.StdVec_RigidConstraintData([m.createData() for m in models])
    pd = pm.createData()
    pin.initConstraintDynamics(pm, pd, cms, cds)
    settings = prox or pin.ProximalSettings(1e-14, 0.0, 1)

    def call() -> np.ndarray:
        return pin.constraintDynamics(pm, pd, y, yd, tau, cms, cds, settings)

    return call


# ----------------------------------------------------------------------------- whole-model comparison
def relative_error(actual, expected) -> float:
    """``max|a − b| / max(1, max|b|)``: the tests' closeness measure (``tests.helpers.assert_close``)."""
    a, b = np.asarray(actual, float), np.asarray(expected, float)
    if a.shape != b.shape:
        return np.inf
    if not b.size:
        return 0.0
    if not np.all(np.isfinite(a)):
        return np.inf
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def oracle_errors(model: wbc.Model, pm: pin.Model, rng: np.random.Generator, dynamics: bool = True) -> dict[str, float]:
    """wbc against Pinocchio on one model at one random state: the relative error (see
    :func:`relative_error`) of every frame placement (``oMf``), the mass matrix, RNEA and, when
    ``dynamics`` (the model has no joints that move no mass), ABA. Layout differences (joint names,
    q/v sizes, frame names and order) are reported as infinite errors under ``"layout"``.

    Pinocchio's ``Data`` grows quadratically with the number of joints: keep ``pm`` to real robots.
    """
    same = (
        model.joint_names == tuple(pm.names)
        and (model.nq, model.nv) == (pm.nq, pm.nv)
        and model.frame_names == tuple(f.name for f in pm.frames)
    )
    errors = {"layout": 0.0 if same else np.inf}
    if not same:
        return errors
    pd = pm.createData()
    q = wbc.random_configuration(model, rng)
    v, a, tau = rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=model.nv)
    pin.forwardKinematics(pm, pd, q)
    pin.updateFramePlacements(pm, pd)
    ws = wbc.Workspace(model, ca.DM(q))
    placements = [ws.frame_placement(k) for k in range(len(model.frames))]
    errors["placements"] = max(
        relative_error(
            np.vstack([np.array(ca.DM(X.R)), np.array(ca.DM(X.p)).T]), np.vstack([M.rotation, M.translation])
        )
        for X, M in zip(placements, pd.oMf)
    )
    errors["M"] = relative_error(wbc.eager.crba(model, q), symmetrized(pin.crba(pm, pd, q)))
    errors["rnea"] = relative_error(wbc.eager.rnea(model, q, v, a), pin.rnea(pm, pd, q, v, a))
    if dynamics:
        errors["aba"] = relative_error(wbc.eager.aba(model, q, v, tau), pin.aba(pm, pd, q, v, tau))
    return errors


# ----------------------------------------------------------------------------- models without a file
def _joint_model(joint: wbc.Joint):
    """Pinocchio's joint model of a wbc joint and the rotation (3, 3) of Pinocchio's joint frame in
    wbc's (identity but for a continuous joint, which Pinocchio's Python bindings only offer about
    z: its frame is turned to bring z onto the axis)."""
    t = joint.type
    if t is wbc.JointType.FREE_FLYER:
        return pin.JointModelFreeFlyer(), np.eye(3)
    if t is wbc.JointType.SPHERICAL:
        return pin.JointModelSpherical(), np.eye(3)
    axis = np.asarray(joint.axis, float)
    if t is wbc.JointType.REVOLUTE:
        return pin.JointModelRevoluteUnaligned(*axis), np.eye(3)
    if t is wbc.JointType.PRISMATIC:
        return pin.JointModelPrismaticUnaligned(axis), np.eye(3)
    if t is wbc.JointType.REVOLUTE_UNBOUNDED:
        return pin.JointModelRUBZ(), pin.Quaternion.FromTwoVectors(np.array([0.0, 0.0, 1.0]), axis).matrix()
    raise ValueError(f"joint {joint.name!r}: no Pinocchio joint model for {t}")


_FRAME_TYPE = {
    wbc.FrameKind.JOINT: pin.FrameType.JOINT,
    wbc.FrameKind.FIXED_JOINT: pin.FrameType.FIXED_JOINT,
    wbc.FrameKind.BODY: pin.FrameType.BODY,
    wbc.FrameKind.OP: pin.FrameType.OP_FRAME,
}


def _se3(X) -> pin.SE3:
    return pin.SE3(np.array(ca.DM(X.R), float), np.array(ca.DM(X.p), float).reshape(3))


def from_wbc(model: wbc.Model) -> pin.Model:
    """Pinocchio's model of a wbc model built without a file (e.g. with ball joints, which URDF
    cannot describe): the same joints in the same order and layout, placements, inertias, gravity,
    and every wbc frame (after the universe's) added with its kind on the same joint, so that
    ``pm.frames`` and ``model.frames`` match by name, order and placement. (A continuous joint's
    frame is turned about its origin in Pinocchio: compare frames, not joint frames.)"""
    pm = pin.Model()
    pm.name = model.name
    pm.gravity = pin.Motion(np.concatenate([np.asarray(model.gravity, float), np.zeros(3)]))
    # wbc's joint frame of each joint in Pinocchio's (a pure rotation, identity but for continuous joints)
    turn = [pin.SE3.Identity() for _ in model.joints]
    for i, j in enumerate(model.joints[1:], start=1):
        jmodel, Ra = _joint_model(j)
        turn[i] = pin.SE3(Ra.T, np.zeros(3))
        pm.addJoint(j.parent, jmodel, turn[j.parent] * _se3(j.placement) * turn[i].inverse(), j.name)
        I = np.asarray(model.inertias[i], float)
        mass = I[0, 0]
        com = wbc.spatial.vee(I[3:6, 0:3]) / mass if mass > 0 else np.zeros(3)
        c = wbc.spatial.skew(com)
        pm.appendBodyToJoint(i, turn[i].act(pin.Inertia(mass, com, I[3:6, 3:6] + mass * c @ c)), pin.SE3.Identity())
    for f in model.frames:
        if f.name == "universe" and f.joint == 0:
            continue
        kind = _FRAME_TYPE[f.kind]
        pm.addFrame(pin.Frame(f.name, f.joint, 0, turn[f.joint] * _se3(f.placement), kind))
    return pm
