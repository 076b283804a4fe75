"""The simulator's one time unit, stated once.

Inside both engines every time is a float64 number of **microseconds** (us). Order round trips
inside an AZ are tens of microseconds and the fastest component (risk check + matching) is below
one, so microseconds keep the numbers readable while float64 keeps nanosecond resolution over a
24-hour run (2**53 ns is about 104 days). Histograms store integer **nanoseconds**.
"""

US_PER_S = 1_000_000.0
BITS_PER_BYTE = 8
# Light in fibre covers about 200 km per ms: 5 us per km (domain brief, "Distance matters").
FIBRE_US_PER_KM = 5.0


def seconds_to_us(seconds: float) -> float:
    """Convert seconds to the simulator's unit."""
    return seconds * US_PER_S


def serialisation_us(payload_bytes: int, bandwidth_gbps: float) -> float:
    """Time to clock ``payload_bytes`` onto a link of ``bandwidth_gbps`` (1 Gb/s = 1e3 bits/us)."""
    return payload_bytes * BITS_PER_BYTE / (bandwidth_gbps * 1e3)
