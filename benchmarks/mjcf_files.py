"""Every MJCF file gymnasium and dm_control ship, through ``wbc.load_mjcf``, against MuJoCo.

The files: gymnasium's ``envs/mujoco/assets/*.xml`` (14), dm_control's ``suite/*.xml`` (19) and its
locomotion walkers ``humanoid_CMU_V2020.xml``, ``rodent.xml``, ``dog_v2/dog.xml`` (36 in all; the
``mjcf-files`` extra installs both packages). No file is special-cased: each is loaded as a user
would, ``wbc.load_mjcf(path)``, and either loads or is refused with a :class:`wbc.ModelError`
naming what wbc cannot represent.

For each loaded file, at random states (configurations within the joint limits, random
quaternions, velocities ~ N(0, 1)), the spanning tree's mass matrix with the armature,
``crba(y) + diag(armature)``, and bias forces ``rnea(y, ẏ, 0)`` are compared with MuJoCo's
``mj_fullM`` and ``qfrc_bias`` of the same file, converted to wbc's coordinates (free joints'
linear velocity in world axes in MuJoCo, in the body's axes in wbc: ``M = Tᵀ M_mj T``,
``h = Tᵀ (h_mj + M_mj Ṫ v)``, :mod:`wbc.sim.mujoco`). The error is relative to the largest entry
of MuJoCo's matrix (or vector), at least 1.

Also timed, side by side in one process (medians of ``--repeat`` runs): ``wbc.load_mjcf`` of the
CMU humanoid against MuJoCo's own compilation of it (``MjModel.from_xml_path``), the anchor.

Usage::

    python -m benchmarks.mjcf_files            # the table, the count, the load time
    python -m benchmarks.mjcf_files --json     # one JSON object per file, then a summary line
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import casadi as ca
import numpy as np

import wbc
from wbc.algorithms import dynamics as D
from wbc.model.mjcf import compile_mjcf, mujoco_module

#: The agreement asked of every loaded file (relative).
TOLERANCE = 1e-9
#: The dm_control locomotion walkers (under ``dm_control/locomotion/walkers/assets``).
WALKERS = ("humanoid_CMU_V2020.xml", "rodent.xml", "dog_v2/dog.xml")


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)  # locates the package without importing it
    return None if spec is None or spec.origin is None else Path(spec.origin).parent


def shipped_files() -> list[tuple[str, Path]]:
    """``(label, path)`` of every file: gymnasium's assets, dm_control's suite and the three walkers.

    Raises:
        wbc.MissingDependency: gymnasium or dm_control is not installed (the ``mjcf-files`` extra).
    """
    gym, dmc = _package_dir("gymnasium"), _package_dir("dm_control")
    if gym is None or dmc is None:
        raise wbc.MissingDependency(
            "the shipped MJCF files come with gymnasium and dm-control: pip install 'wbc[mjcf-files]'"
        )
    out = [(f"gymnasium/{p.name}", p) for p in sorted((gym / "envs/mujoco/assets").glob("*.xml"))]
    out += [(f"dm_control/suite/{p.name}", p) for p in sorted((dmc / "suite").glob("*.xml"))]
    out += [(f"dm_control/walkers/{w}", dmc / "locomotion/walkers/assets" / w) for w in WALKERS]
    return out


@dataclasses.dataclass
class FileResult:
    """One file's outcome: loaded (sizes, errors) or refused (the message)."""

    label: str
    loaded: bool
    message: str = ""
    nq: int = 0
    nv: int = 0
    clusters: int = 0
    actuated: int = 0
    warnings: tuple[str, ...] = ()
    mass_matrix_error: float = float("nan")
    bias_error: float = float("nan")

    @property
    def agrees(self) -> bool:
        return self.loaded and self.mass_matrix_error <= TOLERANCE and self.bias_error <= TOLERANCE


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b), initial=0.0) / max(1.0, float(np.max(np.abs(b), initial=0.0))))


def compare_with_mujoco(cm: wbc.ClusterModel, m, states: int, rng: np.random.Generator) -> tuple[float, float]:
    """Largest relative error of ``M + armature`` and of ``h`` against MuJoCo's over random states."""
    from wbc.sim.mujoco import bias_to_wbc, mass_matrix_to_wbc, qpos_from_q, qvel_from_v

    mujoco = mujoco_module()
    tree = cm.tree
    d = mujoco.MjData(m)
    arm = np.zeros(tree.nv) if cm.armature is None else cm.armature
    M_mj = np.zeros((m.nv, m.nv))
    err_M = err_h = 0.0
    for _ in range(states):
        y = wbc.random_configuration(tree, rng)
        v = rng.normal(size=tree.nv)
        d.qpos[:] = qpos_from_q(tree, y)
        d.qvel[:] = qvel_from_v(tree, y, v)
        mujoco.mj_forward(m, d)
        mujoco.mj_fullM(m, d, M_mj)
        H = np.array(ca.DM(D.crba(tree, ca.DM(y)))) + np.diag(arm)
        h = np.array(ca.DM(D.nonlinear_effects(tree, ca.DM(y), ca.DM(v)))).ravel()
        err_M = max(err_M, _relative(H, mass_matrix_to_wbc(tree, y, M_mj)))
        err_h = max(err_h, _relative(h, bias_to_wbc(tree, y, v, M_mj, d.qfrc_bias)))
    return err_M, err_h


def check_file(label: str, path: Path, states: int = 5, seed: int = 0) -> FileResult:
    """Load ``path`` with ``wbc.load_mjcf`` and, if it loads, compare it with MuJoCo (see the module)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            cm = wbc.load_mjcf(path)
        except wbc.ModelError as e:
            return FileResult(label, False, str(e))
    m, _ = compile_mjcf(path)
    err_M, err_h = compare_with_mujoco(cm, m, states, np.random.default_rng(seed))
    return FileResult(
        label,
        True,
        "",
        cm.tree.nq,
        cm.tree.nv,
        sum(1 for c in cm.infos if not c.trivial),
        cm.tree.n_actuated,
        tuple(str(w.message) for w in caught if issubclass(w.category, wbc.ModelWarning)),
        err_M,
        err_h,
    )


def load_times(path: Path, repeat: int) -> tuple[float, float]:
    """Medians (s) of ``wbc.load_mjcf(path)`` and of MuJoCo's ``MjModel.from_xml_path(path)``,
    timed in alternation."""
    mujoco = mujoco_module()
    ours, theirs = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        mujoco.MjModel.from_xml_path(str(path))
        theirs.append(time.perf_counter() - t)
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", wbc.ModelWarning)
            wbc.load_mjcf(path)
        ours.append(time.perf_counter() - t)
    return statistics.median(ours), statistics.median(theirs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--states", type=int, default=5, help="random states per file (default 5)")
    parser.add_argument("--repeat", type=int, default=5, help="load-time runs (default 5)")
    parser.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    args = parser.parse_args(argv)
    results = []
    for label, path in shipped_files():
        r = check_file(label, path, args.states)
        results.append(r)
        if args.json:
            print(json.dumps(dataclasses.asdict(r) | {"agrees": r.agrees}), flush=True)
        elif r.loaded:
            print(
                f"{label:44s} loaded  nq={r.nq:3d} nv={r.nv:3d} clusters={r.clusters} actuated={r.actuated:3d}  "
                f"M err {r.mass_matrix_error:.1e}  h err {r.bias_error:.1e}{'' if r.agrees else '  DISAGREES'}"
                + (f"  ({len(r.warnings)} warning)" if r.warnings else ""),
                flush=True,
            )
        else:
            print(f"{label:44s} refused: {r.message}", flush=True)
    cmu = dict(shipped_files())["dm_control/walkers/humanoid_CMU_V2020.xml"]
    ours, theirs = load_times(cmu, args.repeat)
    loaded = [r for r in results if r.loaded]
    summary = {
        "kind": "summary",
        "files": len(results),
        "loaded": len(loaded),
        "agree_to_1e-9": sum(r.agrees for r in loaded),
        "refused": len(results) - len(loaded),
        "worst_mass_matrix_error": max((r.mass_matrix_error for r in loaded), default=None),
        "worst_bias_error": max((r.bias_error for r in loaded), default=None),
        "cmu_load_mjcf_s": round(ours, 4),
        "cmu_mujoco_compile_s": round(theirs, 4),
        "cmu_load_ratio": round(ours / theirs, 2),
    }
    if args.json:
        print(json.dumps(summary))
    else:
        print(
            f"\n{summary['loaded']} of {summary['files']} loaded, {summary['agree_to_1e-9']} agree with MuJoCo to "
            f"{TOLERANCE:g} (worst M {summary['worst_mass_matrix_error']:.1e}, h {summary['worst_bias_error']:.1e}); "
            f"{summary['refused']} refused.\nCMU humanoid: wbc.load_mjcf {ours * 1e3:.1f} ms, MuJoCo's compiler alone "
            f"{theirs * 1e3:.1f} ms (ratio {ours / theirs:.2f})"
        )
    return 0 if all(r.agrees for r in loaded) else 1


if __name__ == "__main__":
    sys.exit(main())
