"""The kernels of the compiled numeric API, one set per model: built on first use, memoized,
bounded, freed with the model.

:func:`kernels_of` gives the :class:`TreeKernels` (a :class:`~wbc.Model`) or
:class:`ClusterKernels` (a :class:`~wbc.ClusterModel`) of a model: one dictionary lookup by the
model's identity. The model is held weakly: when it is garbage-collected its entry, its kernels and
their libraries go with it.

Each function of :mod:`wbc.numeric` is one kernel per (model, function, options), traced from the
same :class:`~wbc.algorithms.workspace.Workspace` expressions as :mod:`wbc.eager`, with a validity
output (:func:`wbc.codegen.calls.validity`), compiled into the kernel cache and indexed by a
fingerprint of the model, the function and its options (:mod:`wbc.codegen.index`): a later process
loads it without tracing. It is called through :func:`wbc.codegen.calls.fast_call`.

- Functions without options (``aba``, ``crba``, ...) are plain attributes: a stand-in that builds
  the function on its first call and puts it in its place (no ``__getattr__``: an attribute read on
  a class with one costs every call).
- Frame functions: one kernel per (function, frame, reference frame), in :attr:`TreeKernels.frames`
  keyed by ``(function, frame, id(reference))`` with the frame as the caller spelled it (a name or
  an index; the same kernel under both) and the reference frame by identity (enum members live
  forever; only valid ones are stored; hashing an enum member costs a Python call). Users query
  few frames, each kernel is small (a chain of joints) and compiles in a fraction of a second; a
  kernel computing every frame would cost every call the whole tree.
- Constraint functions (Delassus, input matrices, cluster Jacobians): one kernel per (function,
  method, constraints by value), in :attr:`ModelKernels.constrained`.

Both dictionaries keep at most :data:`MAX_KEYS` keys; beyond, the oldest key is dropped (its kernel
comes back from the disk cache, without tracing, if it is asked for again).

First use without an index entry: the function is traced, answers at once from CasADi's virtual
machine, and is compiled in the background (:mod:`wbc.codegen.background`); the compiled call then
replaces the virtual machine's everywhere it is stored (same results, bit for bit).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import casadi as ca
import numpy as np

from ..algorithms import dynamics
from ..algorithms.clusters import dynamics as cluster_dynamics
from ..algorithms.clusters import operational as cluster_operational
from ..algorithms.clusters.kinematics import ClusterKinematics
from ..algorithms.constraints import LinkConstraint, resolve
from ..algorithms.workspace import Workspace
from ..errors import InputError
from ..model import checks
from ..model.clusters import LOOP_TOLERANCE, ClusterModel, closed_configuration
from ..model.configuration import integrated
from ..model.model import Model
from ..spatial.algebra import act_force
from . import background
from .cache import DEFAULT_FLAGS, HOT_FLAGS, find_compiler
from .calls import fast_call, validity
from .fingerprint import fingerprint
from .index import build_indexed, find_indexed
from .kernel import Kernel
from .trace import trace

__all__ = [
    "kernels_of",
    "ModelKernels",
    "TreeKernels",
    "ClusterKernels",
    "NonFiniteForces",
    "MAX_KEYS",
    "MAX_WRENCHES",
    "LOOP_TOLERANCE",
]

#: How many (frame, reference) or (method, constraints) keys one model keeps kernels for.
MAX_KEYS = 256

#: External forces on up to this many frames are inputs of their kernel, one per frame.
MAX_WRENCHES = 5

_registry: dict[int, ModelKernels] = {}

Shape = Callable[[Any], "int | tuple[int, int]"]
Swap = Callable[[Any, Callable, Callable], None]  # (kernels, old call, new call)


def kernels_of(model) -> ModelKernels:
    """The kernels of ``model`` (created empty on first use).

    Raises:
        InputError: ``model`` is neither a :class:`~wbc.Model` nor a :class:`~wbc.ClusterModel`.
    """
    found = _registry.get(id(model))
    if found is not None:
        return found
    kind: type[ModelKernels]
    if isinstance(model, Model):
        kind = TreeKernels
    elif isinstance(model, ClusterModel):
        kind = ClusterKernels
    else:
        raise InputError(f"model must be a wbc.Model (or a wbc.ClusterModel), got {type(model).__name__}")
    key = id(model)

    def forget(_: weakref.ref) -> None:
        _registry.pop(key, None)

    entry = kind(weakref.ref(model, forget))
    _registry[key] = entry
    return entry


class _Function:
    """What one kernel computes: ``compute(model, *inputs)`` on symbols, its inputs (names whose
    sizes :meth:`ModelKernels._size` knows; ``labels`` maps some to the names errors give them)
    and its output (name, shape of ``model``); ``hot``: traced hot (compiled at ``-O2``,
    :data:`~wbc.codegen.cache.HOT_FLAGS`)."""

    __slots__ = ("compute", "hot", "inputs", "labels", "output", "shape")

    def __init__(
        self,
        inputs: tuple[str, ...],
        output: str,
        shape: Shape,
        compute: Callable,
        labels: Mapping[str, str] = {},
        hot: bool = False,
    ) -> None:
        self.inputs, self.output, self.shape, self.compute = inputs, output, shape, compute
        self.labels = dict(labels)
        self.hot = hot


def _nv(model) -> int:
    return model.nv


def _nv_square(model) -> tuple[int, int]:
    return (model.nv, model.nv)


def _three(model) -> int:
    return 3


def _six(model) -> int:
    return 6


def _body_forces(model: Model, F) -> dict[int, Any]:
    """The columns of ``F`` (6, njoints) as the body-force map of :mod:`wbc.algorithms.dynamics`."""
    return {i: F[:, i] for i in range(1, model.njoints)}


def _aba_fext(model: Model, q, v, tau, F):
    checks.invertible_dynamics(model, "the articulated-body algorithm")
    return dynamics.aba(model, q, v, tau, _body_forces(model, F))


def _rnea_fext(model: Model, q, v, a, F):
    return dynamics.rnea(model, q, v, a, _body_forces(model, F))


_TREE_FUNCTIONS: dict[str, _Function] = {
    "rnea": _Function(("q", "v", "a"), "tau", _nv, lambda m, q, v, a: Workspace(m, q, v).rnea(a), hot=True),
    "rnea_fext": _Function(("q", "v", "a", "fext"), "tau", _nv, _rnea_fext),
    "nonlinear_effects": _Function(
        ("q", "v"), "h", _nv, lambda m, q, v: Workspace(m, q, v).nonlinear_effects(), hot=True
    ),
    "crba": _Function(("q",), "M", _nv_square, lambda m, q: Workspace(m, q).crba(), hot=True),
    "aba": _Function(("q", "v", "tau"), "qdd", _nv, lambda m, q, v, tau: Workspace(m, q, v).aba(tau), hot=True),
    "aba_fext": _Function(("q", "v", "tau", "fext"), "qdd", _nv, _aba_fext),
    "free_acceleration": _Function(("q", "v"), "a0", _nv, lambda m, q, v: Workspace(m, q, v).free_acceleration()),
    "center_of_mass": _Function(("q",), "com", _three, lambda m, q: Workspace(m, q).center_of_mass()),
    "com_velocity": _Function(("q", "v"), "vcom", _three, lambda m, q, v: Workspace(m, q, v).com_velocity()),
    "com_jacobian": _Function(("q",), "Jcom", lambda m: (3, m.nv), lambda m, q: Workspace(m, q).com_jacobian()),
    "com_drift": _Function(("q", "v"), "acom", _three, lambda m, q, v: Workspace(m, q, v).com_drift()),
    "centroidal_map": _Function(("q",), "Ag", lambda m: (6, m.nv), lambda m, q: Workspace(m, q).centroidal_map()),
    "centroidal_drift": _Function(("q", "v"), "dhg", _six, lambda m, q, v: Workspace(m, q, v).centroidal_drift()),
    "centroidal_momentum": _Function(("q", "v"), "hg", _six, lambda m, q, v: Workspace(m, q, v).centroidal_momentum()),
    # q ⊕ dv (dv = v dt: wbc.numeric.integrate multiplies)
    "integrate": _Function(("q", "v"), "q_next", lambda m: m.nq, lambda m, q, dv: integrated(m, q, dv)),
}

_CLUSTER_FUNCTIONS: dict[str, _Function] = {
    "cluster_rnea": _Function(("y", "v", "a"), "tau", _nv, lambda cm, y, v, a: cluster_dynamics.rnea(cm, y, v, a)),
    "cluster_aba": _Function(("y", "v", "tau"), "qdd", _nv, lambda cm, y, v, tau: cluster_dynamics.aba(cm, y, v, tau)),
}

_ALL_NAMES = (*_TREE_FUNCTIONS, *_CLUSTER_FUNCTIONS)


class ModelKernels:
    """The compiled functions of one model (see the module docstring).

    Attributes:
        constrained: ``(function, method, constraints) -> call`` of the constraint functions.
    """

    _FUNCTIONS: ClassVar[dict[str, _Function]] = {}
    _KIND = ""  # what the model is, for messages

    # the functions without options (instance attributes, see the module docstring)
    rnea: Callable[..., np.ndarray]
    rnea_fext: Callable[..., np.ndarray]
    nonlinear_effects: Callable[..., np.ndarray]
    crba: Callable[..., np.ndarray]
    aba: Callable[..., np.ndarray]
    aba_fext: Callable[..., np.ndarray]
    free_acceleration: Callable[..., np.ndarray]
    center_of_mass: Callable[..., np.ndarray]
    com_velocity: Callable[..., np.ndarray]
    com_jacobian: Callable[..., np.ndarray]
    com_drift: Callable[..., np.ndarray]
    centroidal_map: Callable[..., np.ndarray]
    centroidal_drift: Callable[..., np.ndarray]
    centroidal_momentum: Callable[..., np.ndarray]
    integrate: Callable[..., np.ndarray]
    cluster_rnea: Callable[..., np.ndarray]
    cluster_aba: Callable[..., np.ndarray]

    def __init__(self, model: weakref.ref) -> None:
        self._model = model
        self._fingerprint: list[str | None] = []
        self._lock = threading.Lock()  # the tables' writers (lookups need none)
        self.constrained: dict[tuple, Callable[..., np.ndarray]] = {}
        self.frames: dict[tuple, Callable[..., np.ndarray]] = _NotApplicable(self._KIND)
        self.forces: dict[tuple, Callable[..., np.ndarray]] = {}
        for name in _ALL_NAMES:
            setattr(self, name, _FirstUse(self, name))

    def frame_function(self, what: str, frame, reference) -> Callable[..., np.ndarray]:
        """See :meth:`TreeKernels.frame_function`."""
        raise InputError(f"the frame functions do not apply to a {self._KIND}")

    def constrained_function(self, what: str, constraints, method) -> Callable[..., np.ndarray]:
        """See :meth:`TreeKernels.constrained_function` and :meth:`ClusterKernels.constrained_function`."""
        raise NotImplementedError

    def body_forces(self, fext: Mapping) -> np.ndarray:
        """See :meth:`TreeKernels.body_forces`."""
        raise InputError(f"external forces do not apply to a {self._KIND}")

    def force_function(self, what: str, fext: Mapping) -> Callable[..., np.ndarray]:
        """See :meth:`TreeKernels.force_function`."""
        raise InputError(f"{what} with external forces does not apply to a {self._KIND}")

    def check_forces(self, fext: Mapping) -> None:
        """See :meth:`TreeKernels.check_forces`."""

    def function(self, name: str) -> Callable[..., np.ndarray]:
        """The call of function ``name`` (without options: ``"aba"``, ``"crba"``, ...), built on
        first use and then the plain attribute ``name``.

        Raises:
            InputError: ``name`` does not apply to this kind of model.
        """
        call = self.__dict__.get(name)
        if call is not None and not isinstance(call, _FirstUse):
            return call
        function = self._FUNCTIONS.get(name)
        if function is None:
            raise InputError(f"{name} does not apply to a {self._KIND}")
        call = self._compile(name, function, (), name, lambda k, old, new: k._swap_attribute(name, old, new))
        with self._lock:
            if isinstance(self.__dict__.get(name), _FirstUse):
                setattr(self, name, call)
        return call

    @property
    def model(self):
        """The model (alive: it is the caller's argument)."""
        return self._model()

    def _size(self, name: str) -> int | tuple[int, int]:
        raise NotImplementedError

    def _validate_input(self, name: str, x, label: str) -> np.ndarray:
        raise NotImplementedError

    def _model_fingerprint(self) -> str | None:
        raise NotImplementedError

    def _residuals(self, q) -> list:
        return []

    def _compile(
        self, name: str, function: _Function, options: tuple, label: str, swap: Swap
    ) -> Callable[..., np.ndarray]:
        """Find ``function`` by fingerprint, or trace it: compiled, or, while it compiles in the
        background, CasADi's virtual machine (``swap(kernels, old, new)`` then puts the compiled
        call in place of the virtual machine's), wrapped by :func:`fast_call`."""
        model = self.model
        tree = model.tree if isinstance(model, ClusterModel) else model  # whose configuration is the first input
        sizes = [(x, self._size(x)) for x in function.inputs]
        shape = function.shape(model)
        validate = self._validator(function.inputs, function.labels)

        def build(*xs):
            return [function.compute(model, *xs), validity(tree, xs, self._residuals(xs[0]), LOOP_TOLERANCE)]

        fp = self._model_fingerprint()
        index_name = f"numeric_{name}"
        flags = HOT_FLAGS if function.hot else DEFAULT_FLAGS
        key, found = find_indexed(
            index_name,
            None if fp is None else fingerprint("wbc.numeric", name, fp, options),
            lambda record: True if record is True else None,
            flags=flags,
        )
        if found is not None:
            return fast_call(found[0], validate)
        traced = trace(
            f"wbc_{label}_{model.name}", sizes, build, [(function.output, shape), ("check", 1)], hot=function.hot
        )
        if not background.enabled() or find_compiler() is None:
            return fast_call(build_indexed(index_name, key, traced, True, flags=flags), validate)
        early = fast_call(Kernel(traced, traced, "sx-vm"), validate)
        entry = weakref.ref(self)

        def done(kernel: Kernel) -> None:
            kernels = entry()
            if kernels is not None:  # else the model is gone
                swap(kernels, early, fast_call(kernel, validate))

        background.submit(
            (index_name, key or id(traced)),
            lambda: build_indexed(index_name, key, traced, True, flags=flags),
            done,
            traced.name(),
        )
        return early

    def _swap_attribute(self, name: str, old: Callable, new: Callable) -> None:
        with self._lock:
            if self.__dict__.get(name) is old:
                setattr(self, name, new)

    def _swap_in(self, table: dict, old: Callable, new: Callable) -> None:
        with self._lock:
            for key, value in list(table.items()):
                if value is old:
                    table[key] = new

    def _validator(self, names: tuple[str, ...], labels: Mapping[str, str]) -> Callable[..., tuple]:
        """``validate(*args)``: the arguments checked (the eager API's errors) and converted."""
        validate_input = self._validate_input
        named = [(name, labels.get(name, name)) for name in names]

        def validate(*args):
            if len(args) != len(named):
                raise InputError(f"{len(named)} arguments expected ({', '.join(n for _, n in named)}), got {len(args)}")
            return tuple(validate_input(name, x, label) for (name, label), x in zip(named, args))

        return validate

    def _constrained_call(
        self, what: str, constraints, method, given, tree: Model, function_of: Callable[[list], _Function]
    ) -> Callable[..., np.ndarray]:
        """The call of ``what`` for ``constraints`` by ``method`` (None on a cluster model; ``given``:
        as the caller spelled it): remembered in :attr:`constrained`, or compiled from
        ``function_of(resolved)`` once the constraints resolve on ``tree``."""
        key = _constraints_key(constraints)
        canonical = None if key is None else (what, method, key)
        call = self.constrained.get(canonical) if canonical is not None else None
        if call is None:
            resolved = resolve(tree, constraints)
            if what.endswith("delassus") and not resolved:
                raise InputError("the Delassus matrix needs at least one constraint")
            call = self._compile(
                what,
                function_of(resolved),
                (key,) if method is None else (method, key),
                what,
                lambda k, old, new: k._swap_in(k.constrained, old, new),
            )
        if canonical is not None:
            self._remember(self.constrained, _keys(canonical, what, constraints, given), call)
        return call

    def _remember(self, table: dict, keys: Sequence, call) -> None:
        with self._lock:
            for key in keys:
                table[key] = call
            while len(table) > MAX_KEYS:
                del table[next(iter(table))]


class TreeKernels(ModelKernels):
    """The compiled functions of a :class:`~wbc.Model`.

    Attributes:
        frames: ``(function, frame, reference) -> call`` of the frame functions.
    """

    _FUNCTIONS = _TREE_FUNCTIONS
    _KIND = "wbc.Model (it takes a wbc.ClusterModel)"

    def __init__(self, model: weakref.ref) -> None:
        super().__init__(model)
        self.frames = {}
        self._force_maps: dict[object, tuple[np.ndarray, int]] = {}

    def _size(self, name: str) -> int | tuple[int, int]:
        model = self.model
        if name == "q":
            return model.nq
        if name == "fext":
            return (6, model.njoints)
        if name.startswith("wrench"):
            return 6
        return model.nv

    def _validate_input(self, name: str, x, label: str) -> np.ndarray:
        if name == "q":
            return checks.configuration(self.model, x)
        if name == "fext":  # made by body_forces: shaped, maybe not finite
            if not np.all(np.isfinite(x)):
                raise NonFiniteForces("fext has non-finite wrenches")
            return x
        if name.startswith("wrench"):
            return checks.vector(x, 6, label)
        return checks.vector(x, self.model.nv, name)

    def _model_fingerprint(self) -> str | None:
        if not self._fingerprint:
            self._fingerprint.append(fingerprint(self.model))
        return self._fingerprint[0]

    # ----------------------------------------------------------------------------- frames
    def frame_function(self, what: str, frame, reference) -> Callable[..., np.ndarray]:
        """The call of frame function ``what`` (``"placement"``, ``"jacobian"``, ``"velocity"``,
        ``"drift"``) for ``frame`` (name or index) in ``reference``, built if needed.

        Raises:
            FrameError: an unknown frame name.
            InputError: a frame index out of range, a reference that is not a ReferenceFrame.
        """
        model = self.model
        index = checks.frame_index(model, frame)
        canonical = (what, index, id(reference))
        call = self.frames.get(canonical)
        if call is None:
            call = self._compile(
                f"frame_{what}",
                _frame_function(what, index, reference),
                (index, reference),
                f"frame_{what}_{index}_{getattr(reference, 'name', 'none').lower()}",
                lambda k, old, new: k._swap_in(k.frames, old, new),
            )
        keys = [canonical, (what, frame, id(reference))] if _hashable(frame) else [canonical]
        self._remember(self.frames, keys, call)
        return call

    # ----------------------------------------------------------------------------- constraints
    def constrained_function(self, what: str, constraints, method) -> Callable[..., np.ndarray]:
        """The call of ``what`` (``"delassus"``, ``"input_matrix"``) for ``constraints`` by ``method``.

        Raises:
            FrameError, InputError, ModelError: as the eager API (unknown frames, bad constraints or
                methods, no constraint for a Delassus matrix, joints that move no mass).
        """
        from ..algorithms.delassus import DelassusMethod
        from ..algorithms.iim import InputMatrixMethod

        if what not in ("delassus", "input_matrix"):
            raise InputError(f"wbc.{what} takes a wbc.ClusterModel, got a wbc.Model")
        given = method
        method = checks.option(DelassusMethod if what == "delassus" else InputMatrixMethod, method, "method")
        return self._constrained_call(
            what, constraints, method, given, self.model, lambda _: _constraint_function(what, constraints, method)
        )

    # ----------------------------------------------------------------------------- external forces
    def force_function(self, what: str, fext: Mapping) -> Callable[..., np.ndarray]:
        """The call of ``what`` (``"rnea"`` or ``"aba"``) with the external forces on ``fext``'s
        frames, in its order: ``call(q, v, a_or_tau, *fext.values())``, in :attr:`forces` under
        ``(what, *frames)``. Up to :data:`MAX_WRENCHES` frames, one kernel per frame set taking
        each wrench as an input; beyond, the wrenches are mapped to body forces in numpy
        (:meth:`body_forces`) for one kernel per function.

        Raises:
            InputError: ``fext`` is not a mapping.
            FrameError: an unknown frame name (InputError: an index out of range).
        """
        checks.external_forces(fext)
        model = self.model
        frames = tuple(fext)
        indices = tuple(checks.frame_index(model, f) for f in frames)
        canonical = (what, *indices)
        call = self.forces.get(canonical)
        if call is None and len(frames) > MAX_WRENCHES:
            call = self._mapped_forces(what, frames)
        elif call is None:
            call = self._compile(
                f"{what}_wrenches",
                _wrench_function(what, indices, tuple(model.frames[i].name for i in indices)),
                indices,
                f"{what}_wrenches_{len(indices)}",
                lambda k, old, new: k._swap_in(k.forces, old, new),
            )
        keys = [canonical, (what, *frames)] if all(_hashable(f) for f in frames) else [canonical]
        self._remember(self.forces, keys, call)
        return call

    def _mapped_forces(self, what: str, frames: tuple) -> Callable[..., np.ndarray]:
        """The call of ``what`` on many frames: wrenches mapped to body forces, then one kernel."""
        fext_function = f"{what}_fext"

        def call(q, v, x, *wrenches):
            fext = dict(zip(frames, wrenches))
            try:
                with np.errstate(invalid="ignore", over="ignore"):  # a non-finite wrench: named below
                    F = self.body_forces(fext)
                return self.function(fext_function)(q, v, x, F)
            except NonFiniteForces:
                self.check_forces(fext)  # names the wrench
                raise

        return call

    def body_forces(self, fext: Mapping) -> np.ndarray:
        """``{frame: LOCAL wrench (6,)}`` as one spatial force per body in its joint frame (6, njoints).

        Shapes and frames are checked here, finiteness by the kernel (then :meth:`check_forces`
        names the wrench).
        """
        checks.external_forces(fext)
        F = np.zeros((self.model.njoints, 6))  # row j: body j's wrench; F.T is the kernel's column-major input
        maps = self._force_maps
        for frame, wrench in fext.items():
            try:
                X, joint = maps[frame]
            except (KeyError, TypeError):
                X, joint = self._force_map(frame)
            if type(wrench) is not np.ndarray or wrench.shape != (6,):
                wrench = checks.vector(wrench, 6, f"fext[{frame!r}]")
            row = F[joint]
            row += X.dot(wrench)
        F[0] = 0.0  # a force on the ground does nothing
        return F.T

    def check_forces(self, fext: Mapping) -> None:
        """Raises the :class:`~wbc.errors.InputError` naming a wrench of ``fext`` that is not finite."""
        for frame, wrench in fext.items():
            checks.vector(wrench, 6, f"fext[{frame!r}]")

    def _force_map(self, frame) -> tuple[np.ndarray, int]:
        model = self.model
        f = model.frames[checks.frame_index(model, frame)]
        found = (np.array(ca.DM(act_force(f.placement, ca.DM.eye(6)))), f.joint)
        if len(self._force_maps) < MAX_KEYS and _hashable(frame):
            self._force_maps[frame] = found
        return found


class _FirstUse:
    """The stand-in of a function without options until its first call (see the module docstring)."""

    __slots__ = ("kernels", "name")

    def __init__(self, kernels: ModelKernels, name: str) -> None:
        self.kernels, self.name = weakref.ref(kernels), name

    def __call__(self, *args) -> np.ndarray:
        kernels = self.kernels()
        if kernels is None:  # cannot happen through wbc.numeric: the caller holds the model
            raise InputError(f"{self.name}: the model is gone")
        return kernels.function(self.name)(*args)


class _NotApplicable(dict):
    """The frame table of a model the frame functions do not apply to: every lookup says so."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def __getitem__(self, key):
        raise InputError(f"the frame functions do not apply to a {self.kind}")


class NonFiniteForces(InputError):
    """The external forces given to a kernel are not finite (which one: :meth:`TreeKernels.check_forces`)."""


class ClusterKernels(ModelKernels):
    """The compiled functions of a :class:`~wbc.ClusterModel` (positions ``y``: spanning tree)."""

    _FUNCTIONS = _CLUSTER_FUNCTIONS
    _KIND = (
        "wbc.ClusterModel (it takes a wbc.Model): use wbc.cluster_rnea, cluster_aba, cluster_delassus, "
        "cluster_input_matrix or cluster_jacobian with y = cm.spanning_configuration(q), or cm.tree alone"
    )

    def _size(self, name: str) -> int | tuple[int, int]:
        cm = self.model
        return cm.tree.nq if name == "y" else cm.nv

    def _validate_input(self, name: str, x, label: str) -> np.ndarray:
        cm = self.model
        return closed_configuration(cm, x) if name == "y" else checks.vector(x, cm.nv, name)

    def _model_fingerprint(self) -> str | None:
        if not self._fingerprint:
            cm = self.model  # the constructor's arguments: everything else is computed from them
            self._fingerprint.append(fingerprint("ClusterModel", cm.tree, cm.clusters, cm.name, cm.urdf, cm.armature))
        return self._fingerprint[0]

    def _residuals(self, y) -> list:
        cm = self.model
        return [c.residual(cm.cluster_coordinates(k, y)) for k, c in enumerate(cm.infos) if c.residual is not None]

    def constrained_function(self, what: str, constraints, method) -> Callable[..., np.ndarray]:
        """The call of ``what`` (``"cluster_delassus"``, ``"cluster_input_matrix"``,
        ``"cluster_jacobian"``) for ``constraints``."""
        if not what.startswith("cluster_"):
            raise InputError(f"wbc.{what} takes a wbc.Model, got a wbc.ClusterModel (use cm.tree)")
        cm = self.model
        return self._constrained_call(
            what, constraints, None, None, cm.tree, lambda resolved: _cluster_constraint_function(what, cm, resolved)
        )


# --------------------------------------------------------------------------------- helpers
def _frame_function(what: str, index: int, reference) -> _Function:
    if what == "placement":

        def placement(m, q):
            M = Workspace(m, q).frame_placement(index)
            return ca.vertcat(ca.horzcat(M.R, M.p), ca.DM([[0.0, 0.0, 0.0, 1.0]]))

        return _Function(("q",), "oMf", lambda m: (4, 4), placement)
    if what == "jacobian":
        return _Function(
            ("q",), "J", lambda m: (6, m.nv), lambda m, q: Workspace(m, q).frame_jacobian(index, reference)
        )
    if what == "velocity":
        return _Function(
            ("q", "v"), "velocity", _six, lambda m, q, v: Workspace(m, q, v).frame_velocity(index, reference)
        )
    return _Function(("q", "v"), "drift", _six, lambda m, q, v: Workspace(m, q, v).frame_drift(index, reference))


def _wrench_function(what: str, indices: tuple[int, ...], frames: tuple) -> _Function:
    """``rnea``/``aba`` with one LOCAL wrench input (6,) per frame of ``indices`` (named ``frames``
    in errors)."""
    wrenches = tuple(f"wrench{k}" for k in range(len(indices)))
    labels = {w: f"fext[{frame!r}]" for w, frame in zip(wrenches, frames)}
    if what == "rnea":

        def rnea(m, q, v, a, *W):
            ws = Workspace(m, q, v)
            return ws.rnea(a, dict(zip(indices, W)))

        return _Function(("q", "v", "a", *wrenches), "tau", _nv, rnea, labels)

    def aba(m, q, v, tau, *W):
        ws = Workspace(m, q, v)
        return ws.aba(tau, dict(zip(indices, W)))

    return _Function(("q", "v", "tau", *wrenches), "qdd", _nv, aba, labels)


def _constraint_function(what: str, constraints, method) -> _Function:
    constraints = list(constraints)
    if what == "delassus":
        m = sum(c.dim for c in constraints)
        return _Function(
            ("q",), "delassus", lambda _: (m, m), lambda mod, q: Workspace(mod, q).delassus(constraints, method)
        )
    return _Function(
        ("q",),
        "Bhat",
        lambda mod: (mod.nv, mod.n_actuated + sum(c.dim for c in constraints)),
        lambda mod, q: Workspace(mod, q).input_matrix(constraints, method),
    )


def _cluster_constraint_function(what: str, cm: ClusterModel, resolved) -> _Function:
    m = sum(c.dim for c in resolved)
    if what == "cluster_delassus":
        return _Function(
            ("y",),
            "delassus",
            lambda _: (m, m),
            lambda c, y: cluster_operational.efpa(c, ClusterKinematics(c, y), resolved),
        )
    if what == "cluster_input_matrix":
        return _Function(
            ("y",),
            "Bhat",
            lambda c: (c.nv, c.n_actuated + m),
            lambda c, y: cluster_operational.iim(c, ClusterKinematics(c, y), resolved),
        )
    return _Function(
        ("y",),
        "J",
        lambda c: (m, c.nv),
        lambda c, y: cluster_operational.constraint_jacobian(c, ClusterKinematics(c, y), resolved),
    )


def _hashable(x) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


def _constraints_key(constraints) -> tuple | None:
    """``constraints`` by value (a :class:`LinkConstraint` by its frame, rows and reference), or
    None when they are not a sequence of hashable things (then nothing is memoized)."""
    try:
        items = tuple(constraints)
    except TypeError:
        return None
    key: list = []
    for c in items:
        if isinstance(c, LinkConstraint):
            try:
                rows = np.asarray(c.rows, dtype=float)
            except (TypeError, ValueError):
                return None
            key.append(("LinkConstraint", c.frame, rows.shape, rows.tobytes(), c.reference))
        else:
            key.append(c)
    key_tuple = tuple(key)
    return key_tuple if _hashable(key_tuple) else None


def _keys(canonical: tuple, what: str, constraints, method) -> list[tuple]:
    """The keys a constraint function is remembered under: by value, and as the caller spelled it
    (unless a LinkConstraint's rows, an array the caller could change in place, are part of it)."""
    keys = [canonical]
    items = tuple(constraints)
    if not any(isinstance(c, LinkConstraint) for c in items) and _hashable((what, method, items)):
        keys.append((what, method, items))
    return keys
