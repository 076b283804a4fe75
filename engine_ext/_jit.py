"""The one way engine_ext compiles its kernels.

``_nrt=False`` switches off Numba's reference-counting runtime: the kernels never allocate, and
keeping the runtime cost 4x on a trivial reject (225 vs 54 ns, measured). The option is private
to Numba, which is why the version is pinned in requirements/dev.lock and why it is set only here.
"""

from collections.abc import Callable
from typing import Any, TypeVar

from numba import njit

F = TypeVar("F", bound=Callable[..., Any])

kernel: Callable[[F], F] = njit(cache=True, _nrt=False)  # type: ignore[call-overload]
inline_kernel: Callable[[F], F] = njit(  # type: ignore[call-overload]
    cache=True, _nrt=False, inline="always"
)
