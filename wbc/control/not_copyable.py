"""A mixin for objects that cannot be copied or pickled (issue 24): a controller holds loaded
compiled kernels (``ctypes``/CasADi handles), their preallocated buffers and solver state; a copy
would share them and a pickle cannot hold them. ``copy.copy``, ``copy.deepcopy`` and ``pickle``
raise :class:`~wbc.errors.NotCopyableError` saying so, instead of ``cannot pickle 'mappingproxy'``.
"""

from __future__ import annotations

from typing import NoReturn

from ..errors import NotCopyableError

__all__ = ["NotCopyable"]


class NotCopyable:
    """Refuses ``copy.copy``, ``copy.deepcopy`` and ``pickle`` with a clear message."""

    def _not_copyable(self, *_) -> NoReturn:
        name = type(self).__name__
        raise NotCopyableError(
            f"a {name} cannot be copied or pickled (it holds loaded compiled kernels, their buffers and "
            f"solver state): build another {name} from the same model, tasks and contacts (its kernel "
            "then comes from the cache without tracing)"
        )

    __reduce__ = __reduce_ex__ = __copy__ = __deepcopy__ = _not_copyable
