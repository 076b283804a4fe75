"""Playing hunts on a class table: many trials of one plan, and what they cost and gain.

One hunt, round after round while the budget lasts: launch ``candidates_per_round`` instances
(each lands at a level drawn from the table's probabilities), probe each over the window
(``probe_rate_per_s`` requests per second) starting at the hour the round starts, keep the best
per the plan's :class:`~twin.hunt.plan.Rule`, terminate the rest. The instance kept so far
(the incumbent) runs through every round and is paid for. A probe window's mean is normal
(many probes) around the window's average of the level's hourly means, with the window's
average per-probe variance over the number of probes. Everything is vectorised over trials and
drawn from one seeded generator: the same plan and seed give the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from twin.hunt import sequential
from twin.hunt.classes import ClassTable
from twin.hunt.plan import MINUTES_PER_HOUR, HuntPlan, Rule
from twin.scenario import HOURS_PER_DAY

SECONDS_PER_HOUR = 3600.0
# Blocks of a sequential test drawn at once (memory: trials x candidates x this, per array).
_CHUNK_BLOCKS = 60


def window_average(hourly: np.ndarray, start_h: np.ndarray, hours: float) -> np.ndarray:
    """The average over ``[start, start + hours)`` of a piecewise-constant daily profile.

    ``hourly`` is (..., 24) (one value per hour, repeated every day), ``start_h`` broadcasts
    against its leading shape (hours since 00 UTC, any real)."""
    start = np.asarray(start_h, dtype=float)
    shape = np.broadcast_shapes(hourly.shape[:-1], start.shape)
    hourly = np.broadcast_to(hourly, shape + (HOURS_PER_DAY,))
    start = np.broadcast_to(start, shape)
    total = hourly.sum(axis=-1)
    cumulative = np.concatenate(
        [np.zeros(hourly.shape[:-1] + (1,)), np.cumsum(hourly, axis=-1)], axis=-1
    )

    def integral(x: np.ndarray) -> np.ndarray:
        days, within = np.divmod(x, HOURS_PER_DAY)
        whole = np.floor(within).astype(np.int64)
        frac = within - whole
        taken = np.take_along_axis(cumulative, whole[..., None], axis=-1)[..., 0]
        part = np.take_along_axis(hourly, np.minimum(whole, 23)[..., None], axis=-1)[..., 0]
        return days * total + taken + frac * part

    return (integral(start + hours) - integral(start)) / hours


@dataclass(frozen=True)
class Trials:
    """The outcome of every trial: the level kept, what it cost, how long it took."""

    kept: np.ndarray  # level index kept at the end
    instance_hours: np.ndarray
    wall_hours: np.ndarray
    rounds: np.ndarray


def _measure(
    table: ClassTable,
    levels: np.ndarray,
    start_h: np.ndarray,
    hours: float,
    probes: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Window means of instances at ``levels`` (any shape; ``start_h`` broadcasts)."""
    start = np.broadcast_to(start_h, levels.shape)
    mean = window_average(table.mean_us[levels], start, hours)
    variance = window_average(table.sd_us[levels] ** 2, start, hours)
    return mean + rng.standard_normal(levels.shape) * np.sqrt(variance / probes)


def _block_means(
    table: ClassTable,
    levels: np.ndarray,
    middle_h: np.ndarray,
    probes: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Means of short blocks of probes: each block at its level's mean for the hour its middle
    falls in (blocks are minutes long; a block across an hour's edge is rare and slight)."""
    hour = np.floor(np.mod(middle_h, HOURS_PER_DAY)).astype(np.int64)
    sd = table.sd_us[levels, hour]
    return table.mean_us[levels, hour] + rng.standard_normal(levels.shape) * sd / np.sqrt(probes)


def play(plan: HuntPlan, table: ClassTable, rng: np.random.Generator) -> Trials:
    """Play ``plan.trials`` hunts on ``table``."""
    n, k = plan.trials, plan.candidates_per_round
    window = plan.window_hours
    probes = plan.probe_rate_per_s * SECONDS_PER_HOUR * window
    incumbent = np.full(n, -1)
    recorded = np.full(n, np.inf)
    spent = np.zeros(n)
    wall = np.zeros(n)
    rounds = np.zeros(n, dtype=np.int64)
    while True:
        has = incumbent >= 0
        cost = (k + has) * window
        active = spent + cost <= plan.budget_instance_hours + 1e-9
        if not active.any():
            break
        idx = np.flatnonzero(active)
        start = (plan.start_hour + wall[idx])[:, None]
        drawn = rng.choice(len(table.levels), size=(idx.size, k), p=table.probability)
        if plan.rule == Rule.SEQUENTIAL:
            kept, hours_used, round_hours = _sequential_round(
                plan, table, drawn, incumbent[idx], start, rng
            )
            incumbent[idx] = kept
            spent[idx] += hours_used
            wall[idx] += round_hours
        else:
            measured = _measure(table, drawn, start, window, probes, rng)
            if plan.rule == Rule.CONCURRENT:
                inc = incumbent[idx]
                inc_now = np.where(
                    inc >= 0,
                    _measure(table, np.maximum(inc, 0)[:, None], start, window, probes, rng)[:, 0],
                    np.inf,
                )
                best_c = measured.argmin(axis=1)
                best_v = measured[np.arange(idx.size), best_c]
                take = best_v < inc_now
            else:
                best_c = measured.argmin(axis=1)
                best_v = measured[np.arange(idx.size), best_c]
                take = best_v < recorded[idx]
            chosen = drawn[np.arange(idx.size), best_c]
            incumbent[idx] = np.where(take, chosen, incumbent[idx])
            recorded[idx] = np.where(take, best_v, recorded[idx])
            spent[idx] += cost[idx]
            wall[idx] += window
        rounds[idx] += 1
    return Trials(kept=incumbent, instance_hours=spent, wall_hours=wall, rounds=rounds)


def _sequential_round(
    plan: HuntPlan,
    table: ClassTable,
    drawn: np.ndarray,
    incumbent: np.ndarray,
    start: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One round of paired sequential tests of each candidate against the incumbent.

    A trial without an incumbent keeps its first candidate as one and tests the others against
    it. Returns the level kept, the instance-hours used and the round's length (hours)."""
    test = plan.sequential
    m, k = drawn.shape
    first = incumbent < 0
    reference = np.where(first, drawn[:, 0], incumbent)
    challengers = drawn.copy()
    live = np.ones((m, k), dtype=bool)
    live[first, 0] = False  # the first candidate became the reference
    block_h = test.block_minutes / MINUTES_PER_HOUR
    max_blocks = max(1, int(round(plan.window_minutes / test.block_minutes)))
    probes = plan.probe_rate_per_s * test.block_minutes * 60.0
    low, high = sequential.thresholds(test.alpha, test.beta)
    llr = np.zeros((m, k))
    diff_sum = np.zeros((m, k))
    stopped_at = np.where(live, max_blocks, 0)
    decided = ~live
    keep = np.zeros((m, k), dtype=bool)
    # The variance of a block difference the test assumes: the table's daily-average per-probe
    # variances of the two instances, over the probes per block (what a hunter would estimate).
    day_var = (table.sd_us**2).mean(axis=1)
    s2 = (day_var[challengers] + day_var[reference][:, None]) / probes
    slope = -test.delta_us / s2
    reference_k = np.broadcast_to(reference[:, None], (m, k))
    for first_block in range(0, max_blocks, _CHUNK_BLOCKS):
        if decided.all():
            break
        blocks = np.arange(first_block, min(first_block + _CHUNK_BLOCKS, max_blocks))
        t = start[..., None] + blocks * block_h  # (m, 1, c)
        shape = (m, k, blocks.size)
        middle = np.broadcast_to(t + block_h / 2, shape)
        d = _block_means(
            table, np.broadcast_to(challengers[..., None], shape), middle, probes, rng
        ) - _block_means(table, np.broadcast_to(reference_k[..., None], shape), middle, probes, rng)
        path = llr[..., None] + np.cumsum(slope[..., None] * (d + test.delta_us / 2.0), axis=-1)
        crossed = (path >= high) | (path <= low)
        hit = crossed.any(axis=-1)
        at = np.where(hit, crossed.argmax(axis=-1), blocks.size - 1)
        running = ~decided
        final = np.take_along_axis(path, at[..., None], axis=-1)[..., 0]
        sums = np.take_along_axis(np.cumsum(d, axis=-1), at[..., None], axis=-1)[..., 0]
        llr = np.where(running, final, llr)
        diff_sum = np.where(running, diff_sum + sums, diff_sum)
        now = running & hit
        keep |= now & (final >= high)
        stopped_at = np.where(now, first_block + at + 1, stopped_at)
        decided |= now
    keep |= ~decided & (llr > 0)  # truncated at the window: the sign decides
    used = stopped_at * block_h
    round_hours = np.maximum(used.max(axis=1), block_h)  # the round lasts a block at least
    mean_diff = np.where(keep, diff_sum / np.maximum(stopped_at, 1), np.inf)
    best = mean_diff.argmin(axis=1)
    any_keep = keep[np.arange(m), best]
    kept = np.where(any_keep, challengers[np.arange(m), best], reference)
    hours_used = used.sum(axis=1) + round_hours  # the reference runs through the round
    return kept, hours_used, round_hours


def measurement_lengths(plan: HuntPlan, table: ClassTable) -> dict[str, Any]:
    """How long a candidate must be measured to tell a placement ``delta_us`` faster apart.

    Fixed windows: the chance of ranking the faster one first when the two are measured over the
    same window (concurrent) and one after the other (recorded: the hour moves between them),
    for a few window lengths; and the fixed and sequential tests' lengths for the plan's error
    rates at one probe per ``1 / probe_rate_per_s`` seconds."""
    from scipy.stats import norm

    d = plan.sequential.delta_us
    day_var = float((table.sd_us**2).mean())
    hour_effect = table.mean_us.mean(axis=0)  # the hour's mean over levels: shared by all
    rows = []
    for minutes in (10.0, 60.0, 360.0, 1440.0):
        hours = minutes / MINUTES_PER_HOUR
        probes = plan.probe_rate_per_s * SECONDS_PER_HOUR * hours
        noise = np.sqrt(2.0 * day_var / probes)
        concurrent = float(norm.cdf(d / noise))
        starts = np.arange(0.0, HOURS_PER_DAY, min(hours, 1.0))  # every window of the day
        before = window_average(hour_effect, starts, hours)  # incumbent's window
        after = window_average(hour_effect, starts + hours, hours)  # the next window
        drift = after - before  # what the hour adds to the candidate measured next
        recorded = float(np.mean(norm.cdf((d - drift) / noise)))
        rows.append(
            {
                "window_minutes": minutes,
                "p_correct_concurrent": concurrent,
                "p_correct_recorded": recorded,
                "largest_hour_drift_us": float(np.abs(drift).max()),
            }
        )
    block_probes = plan.probe_rate_per_s * plan.sequential.block_minutes * 60.0
    s2 = 2.0 * day_var / block_probes
    alpha, beta = plan.sequential.alpha, plan.sequential.beta
    fixed = sequential.fixed_blocks(alpha, beta, d, s2) * plan.sequential.block_minutes
    asn0, asn1 = sequential.expected_blocks(alpha, beta, d, s2)
    return {
        "delta_us": d,
        "per_probe_sd_us": float(np.sqrt(day_var)),
        "windows": rows,
        "fixed_window_minutes": fixed,
        "sequential_expected_minutes_not_faster": asn0 * plan.sequential.block_minutes,
        "sequential_expected_minutes_faster": asn1 * plan.sequential.block_minutes,
        "alpha": alpha,
        "beta": beta,
    }


def summarise(plan: HuntPlan, table: ClassTable, trials: Trials) -> dict[str, Any]:
    """What the hunts achieved: the public JSON shape of ``twin hunt --json``."""
    daily = table.daily_mean_us
    final = daily[trials.kept]
    best = table.best_us
    n = len(final)
    within = final - best <= plan.within_us
    p_within = float(within.mean())
    return {
        "hunt": plan.name,
        "scenario": plan.scenario.name,
        "rule": str(plan.rule),
        "trials": n,
        "seed": plan.seed,
        "levels": [
            {
                "level": lv,
                "probability": float(p),
                "cpg_probability": float(q),
                "daily_mean_us": float(m),
                "hourly_mean_us": [float(x) for x in table.mean_us[i]],
            }
            for i, (lv, p, q, m) in enumerate(
                zip(table.levels, table.probability, table.cpg_probability, daily, strict=True)
            )
        ],
        "best_possible_us": best,
        "random_instance_us": table.random_instance_us,
        "shared_cpg_us": table.cpg_us,
        "within_us": plan.within_us,
        "p_within": p_within,
        "p_within_se": float(np.sqrt(p_within * (1 - p_within) / n)),
        "expected_final_us": float(final.mean()),
        "gain_vs_random_us": float(table.random_instance_us - final.mean()),
        "gap_to_shared_cpg_us": float(final.mean() - table.cpg_us),
        "instance_hours": float(trials.instance_hours.mean()),
        "cost_usd": float(trials.instance_hours.mean() * plan.price_per_instance_hour),
        "wall_hours": float(trials.wall_hours.mean()),
        "rounds": float(trials.rounds.mean()),
        "final_us_quantiles": {
            q: float(np.quantile(final, float(q) / 100)) for q in ("5", "50", "95")
        },
        "measurement": measurement_lengths(plan, table),
    }


def run_hunt(plan: HuntPlan, table: ClassTable) -> dict[str, Any]:
    """Play the plan's trials from its seed and summarise them."""
    rng = np.random.default_rng([plan.seed, 0x48554E54])
    return summarise(plan, table, play(plan, table, rng))
