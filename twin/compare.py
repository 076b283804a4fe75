"""Several scenarios side by side, as one tidy frame: the notebook's first question.

>>> from twin import compare
>>> compare(["scenarios/tier1_peering_cpg.toml", "scenarios/tier3_privatelink.toml"],
...         {"workload.rate_msgs_per_s": 100_000})  # doctest: +SKIP

One row per scenario, message kind (``all``, and ``order``/``cancel`` for the order loop) and
statistic, with the scenario's name and file, the rate, the engine, whether the run was stable,
and the value in microseconds (null for an unstable run). Same scenario and seed, same numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from twin.jsontext import dumps
from twin.scenario import Scenario, load_scenario
from twin.simulation import DEFAULT_ENGINE, run


def compare(
    scenarios: Sequence[Scenario | str | Path],
    changes: Mapping[str, Any] | None = None,
    engine: str = DEFAULT_ENGINE,
) -> Any:
    """Run each scenario (with the same dotted ``changes``) and return a tidy polars frame: one
    row per scenario, kind and statistic, saying what ran (``duration_s``, and ``overrides``:
    the fields changed from each file, as JSON text)."""
    import polars as pl

    frames = []
    for item in scenarios:
        scenario = item if isinstance(item, Scenario) else load_scenario(item)
        if changes:
            scenario = scenario.with_fields(dict(changes))
        result = run(scenario, engine=engine)
        percentiles = result.to_polars()["percentiles"]
        if percentiles.height == 0:  # unstable: one row that says so
            percentiles = pl.DataFrame(
                {"kind": ["all"], "statistic": ["p50"], "value_us": [None]},
                schema={"kind": pl.Utf8, "statistic": pl.Utf8, "value_us": pl.Float64},
            )
        frames.append(
            percentiles.with_columns(
                pl.lit(scenario.name).alias("scenario"),
                pl.lit(scenario.source).alias("source"),
                pl.lit(result.rate_msgs_per_s).alias("rate_msgs_per_s"),
                pl.lit(engine).alias("engine"),
                pl.lit(result.stable).alias("stable"),
                pl.lit(result.duration_s, dtype=pl.Float64).alias("duration_s"),
                pl.lit(dumps(result.overrides)).alias("overrides"),
            )
        )
    columns = [
        "scenario", "source", "rate_msgs_per_s", "engine", "stable", "duration_s", "overrides",
        "kind", "statistic",
    ]  # fmt: skip
    return pl.concat(frames).select([*columns, "value_us"])
