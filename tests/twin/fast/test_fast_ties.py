"""Fully deterministic runs against the reference, exactly, including exact ties.

With every time constant and sends evenly spaced, both engines are deterministic, so their
outputs can be compared exactly. The path is built so that a message's second visit to a station
can land at exactly the time the next message's first visit does (all times are exact binary
fractions), and, with two messages per cycle, so that the cancel's start ties with other arrivals.

Known difference (present since the first fast engine; xfail, strict, below): when two arrivals
at a station tie exactly, the fast engine serves them in the order their arrival events were
pushed on its calendar, which is not always SimPy's event order. Ties have
probability zero once any delay on the path is random, so distributions (and every shipped
scenario) are unaffected; a deterministic path with evenly spaced sends can differ by a fraction
of a service time per tie.
"""

from __future__ import annotations

import numpy as np
import pytest

from twin import des, dtypes, fast
from twin.dists import Const
from twin.load import Load
from twin.path import Hop, Station, compile_path


def tied_path(servers: int) -> list[Hop]:
    shared = Station("shared", servers)
    other = Station("other", 1)
    return [
        Hop("first visit", "test", service=Const(1.0), station=shared),
        Hop("wire", "test", fixed_us=2.0),
        Hop("middle", "test", service=Const(0.5), station=other),
        Hop("second visit", "test", service=Const(1.0), station=shared),
    ]


TIE_ORDER_DIFFERS = pytest.mark.xfail(
    strict=True, reason="exact ties at a station: calendar push order is not SimPy's event order"
)
CASES = [
    pytest.param(1, 1, 4.5, id="c1-single-no-ties"),
    pytest.param(2, 1, 3.5, id="c2-single"),
    pytest.param(2, 1, 4.5, id="c2-single-no-ties"),
    pytest.param(2, 1, 1.75, id="c2-single-queueing"),
    pytest.param(2, 2, 3.5, id="c2-order-cancel"),
    pytest.param(1, 1, 3.5, id="c1-single-ties", marks=TIE_ORDER_DIFFERS),
    pytest.param(1, 1, 1.75, id="c1-single-queueing-ties", marks=TIE_ORDER_DIFFERS),
    pytest.param(1, 2, 3.5, id="c1-order-cancel-ties", marks=TIE_ORDER_DIFFERS),
    pytest.param(1, 2, 4.5, id="c1-order-cancel", marks=TIE_ORDER_DIFFERS),
    pytest.param(1, 2, 1.75, id="c1-order-cancel-queueing", marks=TIE_ORDER_DIFFERS),
    pytest.param(2, 2, 4.5, id="c2-order-cancel-ties", marks=TIE_ORDER_DIFFERS),
    pytest.param(2, 2, 1.75, id="c2-order-cancel-queueing", marks=TIE_ORDER_DIFFERS),
]


@pytest.mark.parametrize(("servers", "per_cycle", "gap_us"), CASES)
def test_deterministic_runs_match_the_reference(
    servers: int, per_cycle: int, gap_us: float
) -> None:
    path = compile_path(tied_path(servers))
    load = Load(
        loop=dtypes.LOOP_OPEN,
        arrivals=dtypes.ARRIVALS_UNIFORM,
        rate_msgs_per_s=per_cycle / gap_us * 1e6,
        accounts=1,
        messages_per_cycle=per_cycle,
        duration_us=400 * gap_us,
        warmup_us=16 * gap_us,
        seed=3,
    )
    reference = des.simulate(path, load)
    candidate = fast.simulate(path, load)
    assert candidate.messages == reference.messages > 0
    np.testing.assert_array_equal(candidate.counts, reference.counts)
    assert candidate.rtt_sum_us == pytest.approx(reference.rtt_sum_us, rel=1e-12)
    np.testing.assert_allclose(candidate.hop_time_sum_us, reference.hop_time_sum_us, rtol=1e-12)
