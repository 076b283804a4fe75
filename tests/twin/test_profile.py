"""Profiles refuse what no parameter can be, naming the parameter, wherever the value comes from."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.twin.conftest import SCENARIOS
from twin.cli import main
from twin.errors import ProfileError
from twin.profile import domain, load_profile, profiles_dir

IMPOSSIBLE = [
    ("cstate_exit_probability", 0.0, "a probability in (0, 1]"),
    ("irq_unpinned_probability", 1.5, "a probability in (0, 1]"),
    ("irq_unpinned_mean_us", -1.0, "a time must be >= 0 us"),
    ("jvm_handoff_sigma", -0.5, "a log-space spread must be >= 0"),
    ("gateway_service_median_us", 0.0, "a median must be > 0 us"),
    ("cell_fibre_km", -2.0, "a distance must be >= 0 km"),
    ("cell_racks", 0.0, "a count must be >= 1"),
]


def _with_value(text: str, name: str, value: float) -> str:
    """The profile's TOML with one parameter's value replaced."""
    pattern = rf"(\[params\.{name}\]\nvalue = )[^\n]+"
    assert re.search(pattern, text), name
    return re.sub(pattern, rf"\g<1>{value}", text)


@pytest.mark.parametrize(("name", "value", "meaning"), IMPOSSIBLE)
def test_an_impossible_replacement_value_names_its_parameter(
    name: str, value: float, meaning: str
) -> None:
    profile = load_profile(profiles_dir() / "default.toml")
    with pytest.raises(ProfileError) as caught:
        profile.with_values({name: value})
    assert f"default.toml: {name} = {value}: {meaning}" in str(caught.value)


@pytest.mark.parametrize(("name", "value", "meaning"), IMPOSSIBLE)
def test_an_impossible_value_in_a_file_names_its_parameter(
    name: str, value: float, meaning: str, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(_with_value((profiles_dir() / "default.toml").read_text(), name, value))
    with pytest.raises(ProfileError) as caught:
        load_profile(bad)
    assert f"bad.toml: {name} = {value}: {meaning}" in str(caught.value)


def test_every_shipped_parameter_has_a_domain_and_lies_in_it() -> None:
    """Loading every shipped profile checks its values; a new parameter whose name ends in no
    known way would get no check, so it must come with a rule."""
    keys = {key for path in profiles_dir().glob("*.toml") for key in load_profile(path)}
    assert len(keys) > 100
    assert sorted(key for key in keys if domain(key) is None) == []


def test_the_cli_reports_a_bad_profile_in_one_line(capsys, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    text = (profiles_dir() / "default.toml").read_text()
    bad.write_text(_with_value(text, "jvm_handoff_sigma", -0.5))
    scenario = (SCENARIOS / "tier1_peering_cpg.toml").read_text()
    assert 'profile = "default"' in scenario
    scenario_path = tmp_path / "s.toml"
    scenario_path.write_text(scenario.replace('profile = "default"', f'profile = "{bad}"'))
    assert main(["run", str(scenario_path), "--duration", "0.01"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"twin run: {scenario_path}: profile: {bad}: jvm_handoff_sigma = -0.5: "
        "a log-space spread must be >= 0"
    )


@pytest.mark.parametrize("name", ["default", "local", "prior"])
def test_a_written_profile_loads_back_to_the_same_values(name: str, tmp_path: Path) -> None:
    from twin.profile import write_profile

    shipped = load_profile(profiles_dir() / f"{name}.toml")
    again = load_profile(write_profile(shipped, tmp_path / "p.toml", header="line one\nline two"))
    assert (tmp_path / "p.toml").read_text().startswith("# line one\n# line two\n\n[meta]")
    assert again.name == shipped.name
    assert dict(again.params) == dict(shipped.params)
    assert {k: v for k, v in again.meta.items() if k != "targets"} == {
        k: v for k, v in shipped.meta.items() if k != "targets"
    } | {"name": shipped.name}
