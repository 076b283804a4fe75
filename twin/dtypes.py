"""Every structured dtype and integer code shared by the two engines.

The compiled path handed to ``twin.des`` and ``twin.fast`` is a structured array of
:data:`HOP_DTYPE` rows plus a few plain arrays. Keeping the layout and its codes in one module is
what lets a SimPy model and a Numba kernel read the same description without drifting apart.

Distribution fields (``*_code``, ``*_p0``, ``*_p1``, ``*_p2``) hold one distribution of
:mod:`twin.dists`: its class's ``code`` and the three numbers of its ``params()``;
:func:`twin.dists.decode` turns them back into the distribution.
"""

import numpy as np

# Workload codes.
LOOP_OPEN = 0  # sends follow a schedule regardless of replies (no coordinated omission)
LOOP_CLOSED = 1  # each account waits for its reply before the next send
ARRIVALS_POISSON = 0
ARRIVALS_UNIFORM = 1
BURST_FIXED = 0  # an open loop's arrival brings ``burst`` cycles
BURST_GEOMETRIC = 1  # ... a geometric number of them, mean ``burst``

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
        # At a reader station (twin.path.Station.reader), a stage of the read: its work once per
        # read (a distribution as above), per TLS record after the first, and whether every
        # message of the read leaves the stage when the whole read's work is done (1) or each
        # one when its own is (0). Zero elsewhere.
        ("read_code", np.int64),
        ("read_p0", np.float64),
        ("read_p1", np.float64),
        ("read_p2", np.float64),
        ("per_record_us", np.float64),
        ("whole_read", np.int64),
        # Work the visit leaves on the station's server after the message moves on (a
        # distribution as above; zero: none).
        ("linger_code", np.int64),
        ("linger_p0", np.float64),
        ("linger_p1", np.float64),
        ("linger_p2", np.float64),
        # 1: the linger is left only by a message that took a new batch at the last batching
        # station it visited (work a batch causes once).
        ("linger_per_batch", np.int64),
        # 1: the linger yields to later arrivals: the station stays awake through it, no
        # server held (twin.path.Hop.linger_yields).
        ("linger_yields", np.int64),
        # The token bucket (twin.path.Allowance) the message takes credit from on arriving at
        # the station (index into the compiled path's allowances, or -1), and how much, in
        # microseconds of the sustained rate.
        ("allowance", np.int64),
        ("allowance_us", np.float64),
        # 1: a wake-up of the station at this hop may stall (twin.path.Hop.may_stall).
        ("may_stall", np.int64),
        # 1: its station holds the message through the next hop, awake meanwhile (Hop.holds).
        ("holds", np.int64),
        # 1: the message keeps its server into the next hop, at the same station
        # (twin.path.Hop.continues).
        ("continues", np.int64),
        # 1: the hop's own wake-up (a distribution as above) replaces its station's when it
        # wakes it (twin.path.Hop.wake).
        ("own_wake", np.int64),
        ("wake_code", np.int64),
        ("wake_p0", np.float64),
        ("wake_p1", np.float64),
        ("wake_p2", np.float64),
    ],
    align=True,
)

# What an arrival that finds every server of a station idle adds, one row per station: to its
# service a wake-up drawn from ``wake_*`` (a distribution as above) plus a cold start
# ``cold_us * (1 - exp(-gap / cold_tau_us))`` growing with the time ``gap`` the station sat idle
# (a sleeping thread: scheduler wake-up, cold caches and clock), and ``stall_*`` (a distribution
# as above) with probability ``1 - exp(-gap / cold_tau_us)``; after it, on its server,
# ``linger_us + linger_cold_us * (1 - exp(-gap / cold_tau_us))`` of work off the message's path
# (before the thread sleeps again). All zero: no wake-up. ``batch_*``: the cost drawn once per
# batch a batching station takes (zero: no batches), per connection with ``batch_per_connection``.
# ``halt_share``, ``halt_tau_us``: the drawn wake-up is scaled by
# ``1 - halt_share * exp(-gap / halt_tau_us)`` (a vCPU woken before it halted; zero: not scaled),
# or by ``1 - halt_share`` when the host still polled the halted vCPU (``poll_*``: the adaptive
# window of twin.path.HaltPolling, its maximum, growth factor, first window and shrink divisor;
# a maximum of zero: no polling); a hop's own wake-up (twin.path.Hop.wake) with a share of 1 in
# place of ``halt_share``. ``wake_work_us``: the woken thread's work added to every
# wake-up (the station's draw or a hop's own), never scaled. ``hiccup_rate_per_s`` and
# ``hiccup_*`` (a distribution as above): the station's vCPU taken from it at that rate for a draw
# of that length (twin.path.Hiccups; a rate of zero: never).
WAKE_DTYPE = np.dtype(
    [
        ("wake_code", np.int64),
        ("wake_p0", np.float64),
        ("wake_p1", np.float64),
        ("wake_p2", np.float64),
        ("cold_us", np.float64),
        ("cold_tau_us", np.float64),
        ("linger_us", np.float64),
        ("linger_cold_us", np.float64),
        ("batch_code", np.int64),
        ("batch_p0", np.float64),
        ("batch_p1", np.float64),
        ("batch_p2", np.float64),
        ("reader", np.int64),  # 1: the station is one thread working read by read
        ("stall_code", np.int64),
        ("stall_p0", np.float64),
        ("stall_p1", np.float64),
        ("stall_p2", np.float64),
        ("batch_per_connection", np.int64),  # 1: one batch per connection (twin.path.Station)
        ("halt_share", np.float64),
        ("halt_tau_us", np.float64),
        ("poll_max_us", np.float64),
        ("poll_grow", np.float64),
        ("poll_grow_start_us", np.float64),
        ("poll_shrink", np.float64),
        ("wake_work_us", np.float64),
        ("hiccup_rate_per_s", np.float64),
        ("hiccup_code", np.int64),
        ("hiccup_p0", np.float64),
        ("hiccup_p1", np.float64),
        ("hiccup_p2", np.float64),
        ("stall_every_wake", np.int64),  # 1: the stall's odds are the same at every wake-up
    ],
    align=True,
)
