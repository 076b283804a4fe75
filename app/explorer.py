"""What-if explorer: pick a deployment, move a control, watch the round-trip distribution respond.

Started with ``make app`` (``streamlit run app/explorer.py``). A thin layout over the twin's public
API: what each control means lives in :mod:`app.controls`, runs and summaries in
:mod:`app.runner`, figures in :mod:`app.charts`. Runs are cached by scenario TOML text + engine +
sample size, so going back to a setting already seen is instant.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import streamlit as st

# `streamlit run` puts app/ on sys.path; the repository root is needed for `app.*` imports.
REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from app import charts, controls, runner, tables  # noqa: E402
from calibration.bands import DEFAULT_DRAWS, prediction_bands  # noqa: E402
from twin import (  # noqa: E402
    DEFAULT_ENGINE,
    ProfileError,
    Scenario,
    ScenarioError,
    TwinError,
    load_profile,
    load_scenario,
    scenario_profile,
)
from twin.errors import one_line  # noqa: E402
from twin.kinds import WorkloadKind  # noqa: E402
from twin.profile import resolve_profile_path  # noqa: E402
from twin.scenario import scenarios_dir  # noqa: E402
from twin.sweep.capacity import CapacityResult, saturation_rate  # noqa: E402

SCENARIOS = scenarios_dir()
UPLOADED = "uploaded"
DEFAULT_BASE = "tier1_peering_cpg"
CONTROL_KEYS = tuple(controls.Controls.__dataclass_fields__)
CEILINGS_US = (20, 50, 100, 150, 200, 300, 500, 750, 1_000, 1_500, 2_000, 3_000, 5_000, 10_000)


@st.cache_data(show_spinner=False)
def failure_message(what: str, exc: Exception) -> str:
    """One line for a what-if that failed: the twin's own error as it words it (bad settings,
    a run that cannot be done), anything else named as a fault of the explorer."""
    if isinstance(exc, TwinError):
        return f"{what} failed: {one_line(str(exc))}"
    detail = one_line(str(exc)) or "no message"
    return (
        f"{what} failed on an unexpected {type(exc).__name__}: {detail} (a fault of the twin, "
        "not of these settings)"
    )


@contextmanager
def shown_errors(what: str) -> Iterator[None]:
    """Any error of the what-if inside is one message in the page, and the page goes on:
    the other views, the controls and the next change keep working (Streamlit's own
    stop and rerun signals are not errors and pass through)."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 -- one view's fault must not take the page down
        st.error(failure_message(what, exc), icon=":material/warning:")


def shipped_scenarios() -> dict[str, str]:
    """Shipped cloud scenario name -> TOML text (live-testbed and broken files left out)."""
    out = {}
    for path in sorted(SCENARIOS.glob("*.toml")):
        try:
            scenario = load_scenario(path)
        except ScenarioError:
            continue
        if controls.unsupported_reason(scenario) is None:
            out[path.stem] = scenario.to_toml()
    return out


@st.cache_data(show_spinner=False, max_entries=512)
def cached_run(toml_text: str, source: str, engine: str, messages: int) -> runner.Summary:
    return runner.simulate(runner.scenario_from_toml(toml_text, source), engine, messages)


def run_many(items: list[tuple[str, Scenario]], engine: str, messages: int, what: str) -> dict:
    """Several cached runs, with a progress bar while any of them is simulated."""
    bar = st.progress(0.0, text=f"Simulating {what}…")
    out = {}
    for i, (label, scenario) in enumerate(items):
        bar.progress(i / len(items), text=f"Simulating {what}: {label} ({i + 1}/{len(items)})")
        out[label] = cached_run(scenario.to_toml(), scenario.source, engine, messages)
    bar.empty()
    return out


def base_scenario() -> Scenario:
    """The scenario the controls start from: a shipped one, or a valid upload."""
    choice = st.session_state.get("base", DEFAULT_BASE)
    uploaded = st.session_state.get("uploaded_scenario")
    if choice == UPLOADED and uploaded is not None:
        name, text = uploaded
        return runner.scenario_from_toml(text, name)
    text = shipped_scenarios()[choice]
    return runner.scenario_from_toml(text, str(SCENARIOS / f"{choice}.toml"))


def on_upload() -> None:
    """Validate an uploaded file; a valid one becomes the base, an invalid one is reported."""
    file = st.session_state.get("upload")
    st.session_state.pop("upload_error", None)
    if file is None:
        return
    try:
        scenario = controls.load_upload(file.name, file.getvalue())
    except ScenarioError as exc:
        st.session_state["upload_error"] = str(exc)
        return
    st.session_state["uploaded_scenario"] = (file.name, scenario.to_toml())
    st.session_state["base"] = UPLOADED


def on_tier() -> None:
    """Picking a tier resets the controls it implies (its usual placement)."""
    st.session_state.update(controls.tier_preset(st.session_state["tier"]))


def reset_controls(base: Scenario) -> None:
    """Load the base scenario's own values into every control."""
    defaults = controls.defaults_from(base)
    for key in CONTROL_KEYS:
        st.session_state[key] = getattr(defaults, key)


def sidebar() -> tuple[Scenario, controls.Controls]:
    shipped = list(shipped_scenarios())
    options = shipped + ([UPLOADED] if "uploaded_scenario" in st.session_state else [])
    uploaded_name = st.session_state.get("uploaded_scenario", ("",))[0]
    st.session_state.setdefault("base", DEFAULT_BASE)
    with st.sidebar:
        st.header("Deployment")
        st.selectbox(
            "Start from scenario",
            options,
            key="base",
            format_func=lambda o: f"uploaded: {uploaded_name}" if o == UPLOADED else o,
        )
        st.file_uploader(
            "…or upload a scenario TOML", type=["toml"], key="upload", on_change=on_upload
        )
        if "upload_error" in st.session_state:
            st.error(
                f"Upload rejected: {st.session_state['upload_error']}", icon=":material/warning:"
            )
        base = base_scenario()
        base_key = (st.session_state["base"], base.to_toml())
        if st.session_state.get("_base_key") != base_key:
            reset_controls(base)
            st.session_state["_base_key"] = base_key
        current = controls.Controls(**{key: st.session_state[key] for key in CONTROL_KEYS})
        if current == controls.defaults_from(base):
            st.caption(base.description)
        else:  # the controls moved away from the scenario: say what the run is now
            st.caption(
                f"Now: {controls.TIERS[current.tier].label}, placement {current.placement}, "
                f"{current.az_layout} (changed from {base.name}: {base.description})"
            )

        st.radio(
            "Access tier",
            list(controls.TIERS),
            key="tier",
            format_func=lambda t: controls.TIERS[t].label,
            on_change=on_tier,
        )
        st.radio("Placement group", controls.PLACEMENTS, key="placement", horizontal=True)
        st.radio("AZ layout", controls.AZ_LAYOUTS, key="az_layout", horizontal=True)
        left, right = st.columns(2)
        for column, key, label in (
            (left, "client_instance", "Client instance"),
            (right, "exchange_instance", "Exchange instance"),
        ):
            types = list(controls.INSTANCE_TYPES)
            if st.session_state[key] not in types:
                types.append(st.session_state[key])
            column.selectbox(label, types, key=key)

        st.header("Workload")
        rates = sorted({*controls.RATES_MSGS_PER_S, st.session_state["rate_msgs_per_s"]})
        st.select_slider(
            "Rate (client messages per second)",
            rates,
            key="rate_msgs_per_s",
            format_func=charts.format_rate,
        )
        left, right = st.columns(2)
        left.number_input("Payload (bytes)", 1, 1_000_000, key="payload_bytes", step=8)
        right.number_input("Accounts", 1, 100_000, key="accounts", step=1)
        st.radio(
            "Loop",
            controls.LOOPS,
            key="loop",
            horizontal=True,
            help="open: sends follow a schedule; closed: each account waits for its reply",
        )

        st.header("Hosts")
        for role, prefix in (("Market maker", "client"), ("Exchange", "exchange")):
            st.toggle(f"{role}: kernel bypass", key=f"{prefix}_bypass")
            st.toggle(f"{role}: host tuning", key=f"{prefix}_tuning", help=TUNING_HELP)
    values = controls.Controls(**{key: st.session_state[key] for key in CONTROL_KEYS})
    return base, values


TUNING_HELP = "busy polling, no deep C-states, IRQs pinned (irqbalance off)"


def headline(summary: runner.Summary, base: runner.Summary | None) -> None:
    if not summary.stable:
        st.error(
            "Unstable: the offered load saturates "
            + "; ".join(summary.saturated)
            + ". There is no steady-state latency; lower the rate or add capacity.",
            icon=":material/block:",
        )
        return
    cols = st.columns(5)
    for col, key in zip(cols, ("p50", "p99", "p99.9", "max"), strict=False):
        delta = None
        if base is not None and base.stable:
            d = summary.p(key) - base.p(key)
            delta = f"{d:+,.1f} µs vs base" if abs(d) >= 0.05 else None
        col.metric(key, charts.format_us(summary.p(key)), delta, delta_color="inverse")
    cols[4].metric(
        "throughput (msg/s)", charts.format_rate(summary.throughput_msgs_per_s).split()[0]
    )


@st.cache_data(show_spinner=False, max_entries=64)
def cached_bands(toml_text: str, source: str, messages: int) -> dict:
    """Calibration bands of a scenario sized to ``messages`` per draw (twin run --bands)."""
    scenario = runner.sized(runner.scenario_from_toml(toml_text, source), messages)
    return prediction_bands(scenario, scenario_profile(scenario))


def distribution_tab(summary: runner.Summary, scenario: Scenario, band_messages: int) -> None:
    if not summary.stable:
        st.info("No distribution: the run is unstable.")
        return
    left, right = st.columns([3, 1])
    marks = right.multiselect(
        "Mark percentiles",
        [k for k, _ in runner.PERCENTILES],
        default=["p50", "p99", "p99.9"],
        key="marks",
    )
    tail = right.toggle("Tail view (1 − CDF)", key="tail_view")
    with_bands = right.toggle(
        "Calibration bands",
        key="bands",
        help=f"90% band of each statistic over the fit's parameter uncertainty: "
        f"{DEFAULT_DRAWS} runs with parameters drawn from the fit (twin run --bands)",
    )
    left.altair_chart(charts.cdf_chart({summary.scenario: summary}, marks, tail))
    bands = None
    if with_bands:
        with st.spinner(f"Simulating {DEFAULT_DRAWS} parameter draws…"):
            bands = cached_bands(scenario.to_toml(), scenario.source, band_messages)
    rows = charts.percentile_rows(summary, marks or ["p50", "p99"], bands)
    show_table(rows)
    st.caption(
        f"{summary.messages:,} recorded round trips. Widest first: neither interval here "
        "covers the model's own error against measurements (docs/accuracy.md reports it: the "
        "lab's leave-one-out predictions); the 90% calibration "
        "band (toggle above, or `twin run --bands`) covers the fit's parameter uncertainty; "
        "the 95% interval is distribution-free (binomial order statistics) and covers only "
        "the seed noise of this run, its placement fixed (neighbouring round trips share "
        "queues, so it is somewhat wider in truth)."
    )


def show_table(rows: list[dict]) -> None:
    """A finished table (:func:`app.tables.display_frame`: no ``None``, units in headers,
    no repeated column), wrapped rather than cut (``st.table``)."""
    st.table(tables.display_frame(rows), hide_index=True)


def tiers_tab(values: controls.Controls, base: Scenario, engine: str, messages: int) -> None:
    st.caption(
        "The same hosts and workload under each access tier (each tier with its usual placement), "
        f"at {charts.format_rate(values.rate_msgs_per_s)}."
    )
    items = []
    for tier in controls.TIERS:
        try:
            items.append((f"Tier {tier}", controls.apply(base, controls.for_tier(values, tier))))
        except ScenarioError as exc:
            st.warning(f"Tier {tier}: {exc}")
    runs = run_many(items, engine, messages, "the four tiers")
    stable = {label: s for label, s in runs.items() if s.stable}
    for label, s in runs.items():
        if not s.stable:
            st.warning(f"{label} is unstable at this rate: {'; '.join(s.saturated)}")
    if not stable:
        return
    left, right = st.columns(2)
    left.plotly_chart(charts.tiers_figure(stable))
    right.altair_chart(charts.cdf_chart(stable, ["p99"]))
    rows = [
        {"tier": label, **{f"{k} (µs)": s.p(k) for k, _ in runner.PERCENTILES}}
        for label, s in stable.items()
    ]
    show_table(rows)


def curve_tab(scenario: Scenario, engine: str, messages: int) -> None:
    rates = runner.curve_rates(scenario)
    items = [
        (charts.format_rate(r), scenario.with_fields({"workload.rate_msgs_per_s": r}))
        for r in rates
    ]
    runs = list(run_many(items, engine, messages, "the latency-throughput curve").values())
    ceiling = st.select_slider(
        "p99 ceiling (µs)",
        CEILINGS_US,
        value=1_000,
        key="ceiling_us",
        format_func=lambda v: f"{v:,} µs",
    )
    saturation = saturation_rate(scenario)
    saturates = (
        "No queueing station saturates"
        if saturation is None
        else f"The busiest station saturates at {charts.format_rate(saturation)}"
    )
    with st.spinner("Searching the highest rate under the ceiling (as twin capacity does)…"):
        found = cached_capacity(scenario.to_toml(), scenario.source, ceiling, engine, messages)
    rate = None if found.bound == "below" else found.max_rate_msgs_per_s
    shown = "none" if rate is None else charts.format_rate(rate)
    if found.bound == "at least":
        shown = f"≥ {shown}"
    st.metric("capacity under the ceiling", shown, help=found.answer)
    st.plotly_chart(charts.curve_figure(rates, runs, ceiling, rate))
    question = found.to_dict()
    st.caption(
        f"Capacity: {found.answer} (95% interval {found.ci95[0]:,.0f} .. {found.ci95[1]:,.0f} "
        f"msg/s over {found.replications} seeds per rate). The same search as `twin capacity "
        f"SCENARIO --p99-ceiling-us {ceiling} --replications {found.replications} "
        "--set workload.duration_s="
        f"{question['duration_s']!r} --set workload.warmup_s={question['warmup_s']!r}` on the "
        f"scenario as run (Download scenario). {saturates}; each point of the curve records "
        f"{messages:,} round trips on the {engine} engine."
    )


@st.cache_data(show_spinner=False, max_entries=64)
def cached_capacity(
    toml_text: str, source: str, ceiling_us: float, engine: str, messages: int
) -> CapacityResult:
    scenario = runner.scenario_from_toml(toml_text, source)
    return runner.capacity(scenario, ceiling_us, engine, messages)


def hops_tab(summary: runner.Summary) -> None:
    if not summary.stable:
        st.info("No hop breakdown: the run is unstable.")
        return
    left, right = st.columns(2)
    by = left.radio("Group", ("by hop", "by component"), horizontal=True, key="hop_group")
    which = right.radio("Round trip", ("mean", "at p99"), horizontal=True, key="hop_stat", index=0)
    rows = charts.hop_rows(summary, by_component=by == "by component")
    column = "mean (µs)" if which == "mean" else "at p99 (µs)"
    total = f"round trip {which}"
    st.plotly_chart(charts.waterfall_figure(rows, column, total))
    show_table(rows)
    st.caption(
        "Means are measured per hop (queueing included). The split at p99 is an estimate: the "
        "tail above the mean is shared out in proportion to each hop's variance (unloaded "
        "variance plus its measured queueing wait squared)."
    )


def tick_tab(summary: runner.Summary, scenario: Scenario) -> None:
    """A tick's journey (feed and tick-to-trade scenarios): a stage waterfall and the
    pipeline's per-stage table, as the C++ engine write-up reports it."""
    if not summary.stable:
        st.info("No stage breakdown: the run is unstable.")
        return
    which = st.radio("Round trip", ("mean", "at p99"), horizontal=True, key="tick_stat")
    column = "mean (µs)" if which == "mean" else "at p99 (µs)"
    end = "tick to ack" if scenario.workload.kind == WorkloadKind.TICK_TO_TRADE else "tick to model"
    st.plotly_chart(charts.waterfall_figure(charts.tick_rows(summary), column, f"{end} {which}"))
    st.markdown("**Stages and milestones**")
    show_table(charts.span_rows(summary))
    st.caption(
        "A stage's latency runs from the stage's start over the whole read to the message "
        "leaving it, so it includes the work on the messages ahead of it in the read; "
        "`inbound` runs from the poll to the model updated. The waterfall's bars are mean hop "
        "times (they add up to the round trip); at p99 the tail is shared out as on the hop view."
    )


def calibration_tab(scenario: Scenario) -> None:
    try:
        profile = load_profile(resolve_profile_path(scenario.profile, scenario.base_dir))
    except ProfileError as exc:
        st.error(str(exc))
        return
    st.subheader(f"Profile {profile.name!r}")
    for key in ("description", "status"):
        if key in profile.meta:
            st.caption(f"{key}: {profile.meta[key]}")
    targets = charts.target_rows(profile)
    if targets:
        st.markdown("**Measured vs fitted**")
        st.caption(
            "Measured vs fitted, per calibration target: error in % for absolute figures, in "
            "percentage points for relative ones (cuts and gains)."
        )
        show_table(tables.target_display_rows(targets))
    else:
        st.info(
            "This profile records no calibration targets yet (no measured-vs-fitted points); "
            "below are its parameters with their uncertainty and source."
        )
    show_table(tables.profile_display_rows(charts.profile_rows(profile)))


@st.cache_data(show_spinner=False, max_entries=8)
def cached_replay(toml_text: str, source: str, flow_bytes: bytes, suffix: str) -> dict:
    """A flow replayed through the scenario on the fast engine: latency over time and the
    replay's summary (the same functions as ``twin replay``)."""
    import tempfile

    from twin.flowfile import read_order_flow
    from twin.replay_run import (
        Flow,
        latency_over_time,
        replay_columns,
        replay_output,
        summarise_replay,
    )
    from twin.simulation import prepare

    scenario = runner.scenario_from_toml(toml_text, source)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"flow{suffix}"
        path.write_bytes(flow_bytes)
        order_flow = read_order_flow(path, scenario.workload.accounts)
    flow = Flow(order_flow.arrivals, order_flow.send_ns, order_flow.payload_bytes, "flow")
    out = replay_output(prepare(scenario), flow.arrivals, DEFAULT_ENGINE)
    columns = replay_columns(flow, out.exchange_us, out.done_us, out.rejected, 0, out.model_us)
    return {
        "series": latency_over_time(columns["send_ns"], columns["rtt_ns"], columns["rejected"]),
        "summary": summarise_replay(columns, scenario.name, DEFAULT_ENGINE),
    }


def flow_tab(scenario: Scenario) -> None:
    upload = st.file_uploader(
        "An order flow (CSV or Parquet: send_ns, kind, optional account, payload_bytes)",
        type=["csv", "parquet"],
        key="flow_upload",
    )
    if upload is not None:
        data, suffix = upload.getvalue(), Path(upload.name).suffix
    else:
        example = SCENARIOS / "flows" / "quiet_burst.parquet"
        data, suffix = example.read_bytes(), ".parquet"
        st.caption("The shipped example: a quiet second, then 100 ms at ten times the rate.")
    try:
        with st.spinner("Replaying the flow…"):
            replay = cached_replay(scenario.to_toml(), scenario.source, data, suffix)
    except TwinError as exc:
        st.error(f"The flow cannot be replayed: {exc}", icon=":material/warning:")
        return
    summary = replay["summary"]
    rtt = summary["rtt_us"]
    left, mid, right, last = st.columns(4)
    left.metric("requests", f"{summary['requests']:,}")
    mid.metric("rejected", f"{summary['rejected']:,}")
    right.metric("p99", charts.format_us(rtt["p99"]))
    lag1 = summary["rtt_lag1_autocorrelation"]
    last.metric("lag-1 autocorrelation", "-" if lag1 is None else f"{lag1:.3f}")
    st.plotly_chart(charts.flow_figure(replay["series"]))
    st.caption(
        "Latency over time as the flow replays through this deployment, the offered rate beside "
        "it: a burst raises latency, which decays as the queues drain."
    )


def downloads(scenario: Scenario, summary: runner.Summary) -> None:
    left, right, _ = st.columns([2, 2, 3])
    left.download_button(
        "Download scenario (TOML)",
        scenario.to_toml(),
        file_name=f"{scenario.name}.toml",
        mime="application/toml",
        on_click="ignore",
    )
    result = dict(summary.result)
    if summary.stable:
        result["rtt_ci95_us"] = {k: list(v) for k, v in summary.ci95_us.items()}
    right.download_button(
        "Download results (JSON)",
        json.dumps(result, indent=2),
        file_name=f"{scenario.name}-result.json",
        mime="application/json",
        on_click="ignore",
    )


def main() -> None:
    st.set_page_config(
        page_title="Exchange latency twin", page_icon=":material/timer:", layout="wide"
    )
    base, values = sidebar()
    engine = DEFAULT_ENGINE
    messages = runner.sample_messages(engine)
    sweep_messages = runner.sweep_messages(engine)
    st.title("Order round-trip latency: what if…")
    try:
        scenario = controls.apply(base, values)
    except ScenarioError as exc:
        st.error(f"These settings do not make a valid deployment: {exc}", icon=":material/warning:")
        st.stop()
    st.caption(
        f"{controls.TIERS[values.tier].label} · placement {values.placement} · "
        f"{values.az_layout} · {charts.format_rate(values.rate_msgs_per_s)} · "
        f"{values.payload_bytes} B · {values.loop} loop · engine **{engine}**, "
        f"{messages:,} messages per run"
    )
    try:
        with st.spinner(f"Simulating {messages:,} round trips on the {engine} engine…"):
            summary = cached_run(scenario.to_toml(), scenario.source, engine, messages)
            reference = None
            if scenario.raw != base.raw:
                reference = cached_run(base.to_toml(), base.source, engine, messages)
    except Exception as exc:  # noqa: BLE001 -- one message in the page, never a traceback
        st.error(failure_message("The run", exc), icon=":material/warning:")
        st.stop()
    headline(summary, reference)
    downloads(scenario, summary)
    names = [
        "Distribution",
        "Four tiers",
        "Latency vs throughput",
        "Where the time goes",
        "Calibration",
        "Scenario",
        "Order flow",
    ]
    feed = scenario.workload.kind.has_feed
    if feed:
        names.append("Tick to trade")
    tabs = st.tabs(names, key="view", on_change="rerun")
    views = [
        lambda: distribution_tab(summary, scenario, sweep_messages),
        lambda: tiers_tab(values, base, engine, messages),
        lambda: curve_tab(scenario, engine, sweep_messages),
        lambda: hops_tab(summary),
        lambda: calibration_tab(scenario),
        lambda: scenario_tab(scenario, summary),
        lambda: flow_tab(scenario),
    ]
    if feed:
        views.append(lambda: tick_tab(summary, scenario))
    for name, tab, view in zip(names, tabs, views, strict=True):
        with tab:
            if tab.open:
                with shown_errors(f"The {name} view"):
                    view()


def scenario_tab(scenario: Scenario, summary: runner.Summary) -> None:
    st.code(scenario.to_toml(), language="toml")
    st.json(summary.placements)


main()
