"""Every structured dtype and integer code shared by the two engines.

The compiled path handed to ``twin.des`` and ``twin.fast`` is a structured array of
:data:`HOP_DTYPE` rows plus a few plain arrays. Keeping the layout and its codes in one module is
what lets a SimPy model and a Numba kernel read the same description without drifting apart.

Distribution codes (``*_code`` fields) and their three parameters ``p0, p1, p2``:

=================  ==============================================  ======================
code               meaning                                         parameters
=================  ==============================================  ======================
DIST_NONE          always zero                                     unused
DIST_CONST         constant                                        p0 = value (us)
DIST_EXP           exponential                                     p0 = mean (us)
DIST_LOGNORMAL     shift + lognormal                               p0 = shift, p1 = median
                                                                   of the lognormal part,
                                                                   p2 = sigma (log space)
DIST_GAMMA         shift + gamma                                   p0 = shift, p1 = shape,
                                                                   p2 = scale (us)
DIST_EMPIRICAL     resample a measured table                       p0 = table row
DIST_OCCASIONAL    a cost paid with some probability, else zero    p0 = cost (us),
                                                                   p1 = probability
=================  ==============================================  ======================
"""

import numpy as np

DIST_NONE = 0
DIST_CONST = 1
DIST_EXP = 2
DIST_LOGNORMAL = 3
DIST_GAMMA = 4
DIST_EMPIRICAL = 5
DIST_OCCASIONAL = 6

DIST_NAMES = {
    DIST_NONE: "none",
    DIST_CONST: "const",
    DIST_EXP: "exponential",
    DIST_LOGNORMAL: "lognormal",
    DIST_GAMMA: "gamma",
    DIST_EMPIRICAL: "empirical",
    DIST_OCCASIONAL: "occasional",
}

# Workload codes.
LOOP_OPEN = 0  # sends follow a schedule regardless of replies (no coordinated omission)
LOOP_CLOSED = 1  # each account waits for its reply before the next send
ARRIVALS_POISSON = 0
ARRIVALS_UNIFORM = 1

# A hop is one place a message spends time: a fixed propagation part, a random part that does not
# queue (infinite servers) and, when ``station >= 0``, a service at a finite-capacity FIFO station.
HOP_DTYPE = np.dtype(
    [
        ("fixed_us", np.float64),
        ("delay_code", np.int64),
        ("delay_p0", np.float64),
        ("delay_p1", np.float64),
        ("delay_p2", np.float64),
        ("service_code", np.int64),
        ("service_p0", np.float64),
        ("service_p1", np.float64),
        ("service_p2", np.float64),
        ("station", np.int64),  # index into the station arrays, or -1 for no queue
    ],
    align=True,
)

# What an arrival that finds a one-server station idle adds to its service, one row per station:
# a wake-up drawn from ``wake_*`` (a distribution as above) plus a cold start
# ``cold_us * (1 - exp(-gap / cold_tau_us))`` growing with the time ``gap`` the server sat idle
# (a sleeping thread: scheduler wake-up, cold caches and clock), and ``linger_us`` the woken
# server stays busy after that message leaves (its work off the message's path before it
# sleeps again). All zero: no wake-up.
WAKE_DTYPE = np.dtype(
    [
        ("wake_code", np.int64),
        ("wake_p0", np.float64),
        ("wake_p1", np.float64),
        ("wake_p2", np.float64),
        ("cold_us", np.float64),
        ("cold_tau_us", np.float64),
        ("linger_us", np.float64),
    ],
    align=True,
)
