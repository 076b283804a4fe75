"""Calibration profiles: the model's numbers, with where each one came from.

A profile is a TOML file (``twin/profiles/*.toml``) that maps parameter names to a value,
an optional standard uncertainty and a source (a row id of the published-figures table, a public
document, a measurement in the repo, or a fit). Components read their numbers only from here, so
nothing fitted is ever hard-coded in the model.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from twin.atomic import write_text
from twin.errors import ProfileError
from twin.tomlio import dump_toml, read_toml

_PARAM_KEYS = {"value", "sd", "source", "fitted", "unit"}

# What a parameter's value may be, by how its name ends (the profile's naming convention):
# checked when a profile is read and when values are replaced, so an impossible number is
# reported by its parameter's name before any component turns it into a distribution.
_DOMAINS: tuple[tuple[str, Callable[[float], bool], str], ...] = (
    ("_median_us", lambda v: v > 0, "a median must be > 0 us"),
    ("_us", lambda v: v >= 0, "a time must be >= 0 us"),
    ("_sigma", lambda v: v >= 0, "a log-space spread must be >= 0"),
    ("_km", lambda v: v >= 0, "a distance must be >= 0 km"),
    ("_probability", lambda v: 0 < v <= 1, "a probability in (0, 1]"),
    ("_prob", lambda v: 0 <= v <= 1, "a probability in [0, 1]"),
    ("_share", lambda v: 0 <= v <= 1, "a share in [0, 1]"),
    ("_msgs_per_s", lambda v: v > 0, "a rate must be > 0"),
    ("_threads", lambda v: v >= 0, "a thread count must be >= 0"),
    ("_cores", lambda v: v >= 1, "a core count must be >= 1"),
    ("_cells", lambda v: v >= 1, "a count must be >= 1"),
    ("_racks", lambda v: v >= 1, "a count must be >= 1"),
    ("_datacenters", lambda v: v >= 1, "a count must be >= 1"),
    ("_span", lambda v: v >= 1, "a count must be >= 1"),
    ("_packets", lambda v: v >= 1, "a packet count must be >= 1"),
    ("_pct", lambda v: v >= 0, "a percentage must be >= 0"),
    ("_factor", lambda v: v >= 1, "a factor >= 1 (how many times longer)"),
    ("_divisor", lambda v: v == 0 or v >= 1, "a divisor: 0 (a reset) or >= 1"),
    ("_stall_shape", lambda v: v in (0, 1), "a stall shape: 0 (exponential) or 1 (uniform)"),
    ("_per_s", lambda v: v >= 0, "a rate must be >= 0 a second"),
)


def _domain(key: str) -> tuple[Callable[[float], bool], str] | None:
    """The rule for parameter ``key``'s values and what it means, if its name has one."""
    for suffix, allowed, meaning in _DOMAINS:
        if key.endswith(suffix):
            return allowed, meaning
    return None


def domain(key: str) -> str | None:
    """What parameter ``key``'s values may be (``None``: its name follows no known rule)."""
    rule = _domain(key)
    return None if rule is None else rule[1]


def check_domain(where: str, key: str, value: float) -> None:
    """Refuse a value its parameter cannot take, naming it (``where`` says which file)."""
    rule = _domain(key)
    if rule is not None and not rule[0](value):
        raise ProfileError(f"{where}: {key} = {value}: {rule[1]}")


@dataclass(frozen=True)
class Parameter:
    """One model parameter: its value, standard uncertainty (0 if unknown) and provenance."""

    value: float
    source: str
    sd: float = 0.0
    fitted: bool = False


@dataclass(frozen=True)
class Profile(Mapping[str, Parameter]):
    """An immutable set of named parameters plus metadata about how they were obtained."""

    name: str
    params: Mapping[str, Parameter]
    meta: Mapping[str, Any] = field(default_factory=dict)
    path: str = "<memory>"

    def __getitem__(self, key: str) -> Parameter:
        try:
            return self.params[key]
        except KeyError:
            raise ProfileError(
                f"{self.path}: parameter {key!r} is missing from profile {self.name!r} "
                "(twin/profiles/prior.toml lists every parameter with its source)"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.params)

    def __len__(self) -> int:
        return len(self.params)

    def value(self, key: str) -> float:
        """The value of parameter ``key`` (raises :class:`ProfileError` naming it if absent)."""
        return self[key].value

    def with_values(self, values: Mapping[str, float], source: str = "override") -> Profile:
        """A copy with some values replaced (used by calibration and what-if tools)."""
        params = dict(self.params)
        for key, val in values.items():
            old = self[key]
            check_domain(self.path, key, float(val))
            params[key] = replace(old, value=float(val), source=source)
        return replace(self, params=MappingProxyType(params))


def profiles_dir() -> Path:
    """The folder of shipped profiles: package data of the model, written by calibration runs."""
    return Path(str(resources.files("twin"))) / "profiles"


SHIPPED_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def shipped_profile_names() -> list[str]:
    """The names of the profiles shipped in :func:`profiles_dir`, sorted."""
    return sorted(p.stem for p in profiles_dir().glob("*.toml"))


def resolve_profile_path(name_or_path: str, relative_to: Path | None = None) -> Path:
    """A profile given by shipped name (``default``) or by path (relative to a scenario file).

    A shipped name is letters, digits, ``_`` and ``-`` (it never leaves the profiles folder);
    anything else must be a path to a ``.toml`` file.
    """
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml":
        if not candidate.is_absolute() and relative_to is not None:
            candidate = relative_to / candidate
        return candidate
    if not SHIPPED_NAME.fullmatch(name_or_path):
        raise ProfileError(
            f"profile {name_or_path!r}: neither a shipped profile name (letters, digits, _ and -: "
            f"{', '.join(shipped_profile_names())}) nor a .toml path"
        )
    return profiles_dir() / f"{name_or_path}.toml"


def _parse_param(path: Path, key: str, raw: Any) -> Parameter:
    where = f"{path}: params.{key}"
    if not isinstance(raw, dict):
        raise ProfileError(f"{where}: expected a table with value and source, got {raw!r}")
    unknown = set(raw) - _PARAM_KEYS
    if unknown:
        raise ProfileError(
            f"{where}: unknown keys {sorted(unknown)}; allowed {sorted(_PARAM_KEYS)}"
        )
    value = raw.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ProfileError(f"{where}.value = {value!r}: must be a finite number")
    check_domain(str(path), key, float(value))
    source = raw.get("source")
    if not isinstance(source, str) or not source.strip():
        raise ProfileError(f"{where}.source: every parameter must cite its source")
    sd = raw.get("sd", 0.0)
    if isinstance(sd, bool) or not isinstance(sd, int | float) or sd < 0:
        raise ProfileError(f"{where}.sd = {sd!r}: must be a number >= 0")
    fitted = raw.get("fitted", False)
    if not isinstance(fitted, bool):
        raise ProfileError(f"{where}.fitted = {fitted!r}: must be true or false")
    return Parameter(value=float(value), source=source, sd=float(sd), fitted=fitted)


def load_profile(path: str | Path) -> Profile:
    """Read and validate a profile file."""
    path = Path(path)
    data = read_toml(path, "profile", ProfileError)
    unknown = set(data) - {"meta", "params", "targets"}
    if unknown:
        raise ProfileError(f"{path}: unknown top-level keys {sorted(unknown)}")
    raw_params = data.get("params")
    if not isinstance(raw_params, dict) or not raw_params:
        raise ProfileError(f"{path}: a profile needs a non-empty [params] table")
    params = {key: _parse_param(path, key, raw) for key, raw in raw_params.items()}
    meta = dict(data.get("meta", {}))
    if "targets" in data:
        meta["targets"] = data["targets"]
    return Profile(
        name=str(meta.get("name", path.stem)),
        params=MappingProxyType(params),
        meta=MappingProxyType(meta),
        path=str(path),
    )


def _plain(value: Any) -> Any:
    """Metadata as plain TOML values (mappings and sequences of scalars)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def profile_toml(profile: Profile, header: str = "") -> str:
    """The profile as TOML that :func:`load_profile` reads back to the same values.

    ``header`` is written first as comment lines (who wrote the file and how to remake it).
    Metadata except ``targets`` goes to ``[meta]``; each parameter to ``[params.NAME]`` with
    its value, its ``sd`` and ``fitted`` flag when set, and its source.
    """
    params: dict[str, Any] = {}
    for name, p in profile.items():
        entry: dict[str, Any] = {"value": p.value}
        if p.sd:
            entry["sd"] = p.sd
        if p.fitted:
            entry["fitted"] = True
        entry["source"] = p.source
        params[name] = entry
    meta = {"name": profile.name} | {
        k: _plain(v) for k, v in profile.meta.items() if k != "targets"
    }
    comments = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
    body = dump_toml({"meta": meta}) + "\n" + dump_toml({"params": params})
    return (comments + "\n" if comments else "") + body


def write_profile(profile: Profile, path: str | Path, header: str = "") -> Path:
    """Write ``profile`` atomically (:func:`profile_toml`) and check that it loads back."""
    path = Path(path)
    write_text(path, profile_toml(profile, header))
    load_profile(path)  # refuse to leave a profile behind that the twin cannot read
    return path
