"""A pair of instances of unknown placement: its placement class is estimated with the fit."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from calibration.calibrate import _placement_classes, evaluate_targets
from calibration.targets import Target, load_targets
from calibration.validate import leave_one_out
from twin.errors import ProfileError
from twin.profile import load_profile, profiles_dir

REPO = Path(__file__).resolve().parents[2]
NOPG = REPO / "scenarios" / "netperf_rr_c5n_nopg.toml"
PAIR = "pair"


def _pair_targets(values: dict[str, float]) -> list[Target]:
    return [
        Target(
            id=f"pair_{stat}",
            row="pub_c5n_xl_netperf_tcprr_mean",
            scenario=NOPG,
            statistic=stat,
            value=value,
            unit="us",
            tolerance=0.05,
            overrides={"workload.rate_msgs_per_s": 40000},
            placement_seeds=2,
            duration_s=0.05,
            latent_placement=PAIR,
        )
        for stat, value in values.items()
    ]


@pytest.fixture(scope="module")
def profile():
    return load_profile(profiles_dir() / "default.toml")


@pytest.fixture(scope="module")
def class_values(profile):
    """Each placement class's mean and p99 for the pair, computed without a latent choice."""
    probe = _pair_targets({"mean": 1.0, "p99": 1.0})
    classes = _placement_classes(probe[0], profile, 1)
    out = {}
    for level, c in classes.items():
        plain = [dataclasses.replace(t, latent_placement=None, placement_seeds=1) for t in probe]
        runs = [evaluate_targets(plain, profile, base_seed=s) for s in c.seeds]
        # one seed per run: pool means and p99s of the class's seeds by their average
        out[level] = {
            stat: sum(r[f"pair_{stat}"] for r in runs) / len(runs) for stat in ("mean", "p99")
        }
    return classes, out


def test_random_placement_reaches_every_level_with_sensible_frequencies(class_values) -> None:
    classes, _ = class_values
    assert set(classes) == {"rack", "cell", "cross_cell", "cross_datacenter"}
    freq = {level: c.probability for level, c in classes.items()}
    assert abs(sum(freq.values()) - 1.0) < 1e-9
    # 20 cells in 3 data centres, 32 racks per cell (the shipped layout)
    assert freq["rack"] < freq["cell"] < freq["cross_cell"] < freq["cross_datacenter"]
    assert 0.55 < freq["cross_datacenter"] < 0.8
    assert all(len(c.seeds) == 2 for c in classes.values())


def test_farther_classes_are_slower(class_values) -> None:
    _, values = class_values
    order = ["rack", "cell", "cross_cell", "cross_datacenter"]
    means = [values[level]["mean"] for level in order]
    assert means == sorted(means)
    assert means[-1] > 1.2 * means[0]


@pytest.mark.parametrize("truth", ["cross_cell", "cross_datacenter"])
def test_figures_of_a_pair_reveal_its_placement_class(profile, class_values, truth) -> None:
    _, values = class_values
    targets = _pair_targets(values[truth])
    chosen: dict[str, str] = {}
    predicted = evaluate_targets(targets, profile, latent_classes=chosen)
    assert chosen[PAIR].startswith(truth)
    for t in targets:
        assert abs(t.error(predicted[t.id])) < 5.0


def test_excluded_members_do_not_weigh_the_classes(profile, class_values) -> None:
    classes, values = class_values
    targets = _pair_targets(values["rack"])
    chosen: dict[str, str] = {}
    everyone = frozenset(t.id for t in targets)
    predicted = evaluate_targets(targets, profile, latent_classes=chosen, latent_exclude=everyone)
    # with nobody to weigh them the classes count by frequency: the common far classes dominate
    assert chosen[PAIR].startswith("cross_datacenter")
    assert predicted["pair_mean"] > values["cross_cell"]["mean"]


def test_leave_one_out_does_not_let_a_target_pick_its_own_class(tmp_path) -> None:
    """The held-out member is predicted at the class its companions choose."""
    targets = load_targets(REPO / "calibration" / "targets" / "published.toml")
    pair_ids = [t.id for t in targets.targets if t.latent_placement]
    assert len(pair_ids) == 3
    keep = {pair_ids[0], pair_ids[1], "pub_m8a_metal_cpg_udp_rtt_p50"}
    small = dataclasses.replace(targets, targets=tuple(t for t in targets.targets if t.id in keep))
    rows = leave_one_out(small, max_nfev=1)
    by_id = {r["target"]: r for r in rows}
    assert set(by_id) == keep
    assert "%" in by_id[pair_ids[0]]["placement"]


def test_latent_placement_is_validated(tmp_path) -> None:
    (tmp_path / "s.toml").write_text(NOPG.read_text())
    base = '[[target]]\nid = "{id}"\nscenario = "s.toml"\nstatistic = "{stat}"\nvalue = 50\n'
    bad = tmp_path / "relative.toml"
    bad.write_text(
        base.format(id="a", stat="p50_cut") + 'baseline = "s.toml"\nlatent_placement = "p"\n'
    )
    with pytest.raises(ProfileError, match="latent_placement"):
        load_targets(bad)
    mixed = tmp_path / "mixed.toml"
    mixed.write_text(
        base.format(id="a", stat="mean")
        + 'latent_placement = "p"\n'
        + base.format(id="b", stat="p99")
        + 'latent_placement = "p"\noverrides = { "workload.accounts" = 2 }\n'
    )
    with pytest.raises(ProfileError, match="share scenario and overrides"):
        load_targets(mixed)
