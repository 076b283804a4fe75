"""``twin hunt``: play a placement hunt on a venue scenario and report what it gains and costs."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from twin.argtypes import output_folder, positive_int, seed
from twin.atomic import write_json
from twin.hunt.plan import HUNT_FILE, Rule, load_hunt
from twin.jsontext import dumps
from twin.scenario import load_scenario

EXIT_OK = 0
# What each rule's comparison row keeps of its summary.
_COMPARED = (
    "p_within",
    "expected_final_us",
    "gain_vs_random_us",
    "gap_to_shared_cpg_us",
    "instance_hours",
    "cost_usd",
    "wall_hours",
)


def hunt(path: str, trials: int | None = None, seed_: int | None = None) -> dict[str, Any]:
    """The hunt file's plan played from its seed, with every rule compared on the same plan."""
    from twin.hunt.classes import class_table  # the model: imported when a hunt runs
    from twin.hunt.simulate import run_hunt  # scipy.stats: a second of every twin's start-up

    plan = load_hunt(path)
    plan = dataclasses.replace(
        plan,
        trials=trials if trials is not None else plan.trials,
        seed=seed_ if seed_ is not None else plan.seed,
    )
    table = class_table(load_scenario(plan.scenario), plan.probe_rate_per_s)
    summary = run_hunt(plan, table)
    summary["rules"] = [
        {
            "rule": str(rule),
            **{k: run_hunt(dataclasses.replace(plan, rule=rule), table)[k] for k in _COMPARED},
        }
        for rule in Rule
    ]
    summary["plan"] = {
        "candidates_per_round": plan.candidates_per_round,
        "window_minutes": plan.window_minutes,
        "budget_instance_hours": plan.budget_instance_hours,
        "start_hour": plan.start_hour,
        "probe_rate_per_s": plan.probe_rate_per_s,
        "price_per_instance_hour_usd": plan.price_per_instance_hour,
    }
    return summary


def format_hunt(s: dict[str, Any]) -> str:
    """The hunt's answer as text."""
    p = s["plan"]
    lines = [
        f"hunt {s['hunt']}  rule {s['rule']}  {s['trials']:,} trials  seed {s['seed']}",
        f"plan: {p['candidates_per_round']} candidates per round, {p['window_minutes']:g} min "
        f"each from {p['start_hour']:02d} UTC, {p['probe_rate_per_s']:g} probes/s, budget "
        f"{p['budget_instance_hours']:g} instance-hours",
        "",
        "level               random  shared CPG   daily mean us",
    ]
    for lv in s["levels"]:
        lines.append(
            f"{lv['level']:18s} {lv['probability']:7.1%} {lv['cpg_probability']:10.1%} "
            f"{lv['daily_mean_us']:15,.1f}"
        )
    lines += [
        "",
        f"best possible {s['best_possible_us']:,.1f} us, random instance "
        f"{s['random_instance_us']:,.1f} us, shared CPG {s['shared_cpg_us']:,.1f} us",
        f"P(ending within {s['within_us']:g} us of the best) = {s['p_within']:.1%} "
        f"(+/- {1.96 * s['p_within_se']:.1%})",
        f"gain vs a random instance {s['gain_vs_random_us']:+,.1f} us; still "
        f"{s['gap_to_shared_cpg_us']:+,.1f} us from a shared CPG",
        f"spent {s['instance_hours']:,.1f} instance-hours (USD {s['cost_usd']:,.2f}) over "
        f"{s['wall_hours']:,.1f} h",
        "",
        "rule         P(within)  gain us  instance-h     USD  wall h",
    ]
    for r in s["rules"]:
        lines.append(
            f"{r['rule']:12s} {r['p_within']:9.1%} {r['gain_vs_random_us']:8.1f} "
            f"{r['instance_hours']:11.1f} {r['cost_usd']:7.2f} {r['wall_hours']:7.1f}"
        )
    m = s["measurement"]
    lines += [
        "",
        f"telling a placement {m['delta_us']:g} us faster apart (per-probe sd "
        f"{m['per_probe_sd_us']:,.0f} us):",
        "window min   P(right) concurrent   P(right) one after the other   hour drift us",
    ]
    for w in m["windows"]:
        lines.append(
            f"{w['window_minutes']:10g} {w['p_correct_concurrent']:21.1%} "
            f"{w['p_correct_recorded']:30.1%} {w['largest_hour_drift_us']:15,.0f}"
        )
    lines.append(
        f"fixed window for alpha {m['alpha']:g}, beta {m['beta']:g}: "
        f"{m['fixed_window_minutes']:,.0f} min; sequential test, expected: "
        f"{m['sequential_expected_minutes_faster']:,.0f} min (faster), "
        f"{m['sequential_expected_minutes_not_faster']:,.0f} min (not faster)"
    )
    return "\n".join(lines)


def cmd_hunt(args: argparse.Namespace) -> int:
    summary = hunt(args.hunt, args.trials, args.seed)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / HUNT_FILE, summary)
        print(f"twin hunt: wrote {(out / HUNT_FILE).resolve()}", file=sys.stderr)
    print(dumps(summary) if args.json else format_hunt(summary))
    return EXIT_OK


def add_parser(sub: Any) -> None:
    """Register ``hunt`` on ``twin``'s subcommands."""
    p = sub.add_parser(
        "hunt", help="simulate a placement hunt on a venue scenario: gain, cost, time to tell"
    )
    p.add_argument("hunt", metavar="HUNT.toml")
    p.add_argument("--trials", type=positive_int, metavar="N", help="override the file's trials")
    p.add_argument("--seed", type=seed, metavar="N", help="override the file's seed")
    p.add_argument(
        "--out",
        type=output_folder,
        metavar="DIR",
        help=f"also write DIR/{HUNT_FILE} (for twin report)",
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(run=cmd_hunt)
