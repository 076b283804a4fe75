"""The fast engine's compiled event loop: one flat ``@njit(cache=True)`` function over arrays.

Semantics are those of :mod:`twin.des`; the structure is chosen for speed (docs/notes/engines.md):

- **Only station arrivals are events.** Fixed times and non-queueing delays touch no shared
  state, so a message walks them at once, up to its next station. The calendar is a binary heap
  of (arrival time, key) whose key holds a sequence number above the message slot; exact ties
  at the root go FIFO by scheduling order (a separate, out-of-line scan). Entries past the
  heap's end are +inf, so a sift-down needs no bounds tests.
- **Stations are Kiefer-Wolfowitz recursions.** Arrivals at every station come in time order,
  so a FIFO station with ``c`` servers needs only its servers' next-free times (as a FIFO
  ``simpy.Resource``, without completion events); the server after the last one used is tried
  first, the array scanned only when it is busy. A sleeping station (:class:`twin.path.Station`)
  reads its idle time off those free times: an arrival after the last server freed wakes it
  (a flag bit of the hop; the wake-up's tables, cold start and linger live in per-station
  arrays read only then). A run of hops that continue (:attr:`twin.path.Hop.continues`) is
  served at its first hop's arrival, hop after hop on the same server: one service.
- **No push when nothing comes first.** A message whose next arrival precedes every pending
  event is processed at once, and so is an arrival at a hop flagged *in order*
  (:func:`twin.fast.engine.in_order_hops`).
- **Draws are table lookups** from each distribution's quantile table
  (:mod:`twin.fast._quantile`); a hop's fixed time is folded into its delay table; empirical
  tables are resampled behind a flag.
- **Few arrays, packed; unsigned positions.** Hop parameters are one 2-D array (``hop_i``, rows
  of a power-of-two length) read through flat views; hot-path indices are ``uint64``.
- **Reader stations** (:class:`twin.path.Station`) park a read's arrivals in a per-station list
  behind one read event (``_read``, out of line), which works out every member's stages, hop
  times and spans. **Spans** open and close by hop bit masks. **Hiccups**: a flagged station's
  work ends at :func:`twin.fast._hiccup.finish` of its vCPU's timeline, as in :mod:`twin.des`.
- A message is recorded when sent inside ``[warmup, end)``; the run goes on until the calendar
  is empty, so every recorded message completes. The order loop's cancel leaves on the ack; a
  closed-loop account starts its next cycle at ``max(now, previous slot + period)``, in turn
  (``in_turn``) no sooner than the previous account in the rotation: one waiting for its turn is
  parked (``SI_WAITING``) until that account's cycle starts.

All state lives in arrays owned by the caller (:mod:`twin.fast.engine`), so a run can stop at a
time horizon or when it runs out of message slots and resume exactly where it stopped. Helpers
on the hot path take and return scalars only and are inlined, which is why the draws are
written out in full.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from twin.fast._hiccup import finish as _finish
from twin.fast._quantile import grid_point
from twin.fast._rng import exponential as _exponential
from twin.fast._rng import uniform as _uniform
from twin.histogram import counts_index
from twin.path import MAX_SPANS

STATUS_DONE = 0  # calendar empty and no cycle left to start
STATUS_PAUSED = 1  # next event is at or after the horizon
STATUS_FULL = 2  # a new cycle needs a message slot and none is free: grow the slot arrays

# Columns of hop_i (one row per hop; built by twin.fast.engine from the path): where the hop's
# delay (fixed time included) and service quantile tables start in ``quantiles``, the empirical
# table row each resamples (-1: none), its station (-1: none) and whether it is in order.
HI_DELAY_Q, HI_SERVICE_Q, HI_DELAY_ROW, HI_SERVICE_ROW, HI_STATION, HI_FLAGS = range(6)
HI_SERVER, HI_SERVERS = 6, 7  # its station's first server in server_free_us, and their count
# Bit masks of the spans (twin.path.Span) the hop opens (entering it) and closes (leaving it);
# at a reader's stage, its per-read work's quantile table and empirical row, whether it is a
# whole-read stage, and the reader's last stage.
HI_SPAN_OPEN, HI_SPAN_CLOSE, HI_READ_Q, HI_READ_ROW, HI_WHOLE_READ, HI_READ_LAST = range(8, 14)
# The quantile table and empirical row of the work the hop leaves on its server (linger), and
# the token bucket it takes credit from (twin.path.Allowance; read at hops flagged FLAG_ALLOWANCE).
HI_LINGER_Q, HI_LINGER_ROW, HI_ALLOWANCE = 14, 15, 16
# The hop's visit to its station (twin.path.CompiledPath.station_visits): a station reading each
# connection apart keeps a batch per connection and visit, at batch_taken_us[station,
# visit * connections + connection].
HI_VISIT = 17
# The quantile table and empirical row of the hop's own wake-up (read at hops flagged
# FLAG_OWN_WAKE; twin.path.Hop.wake).
HI_WAKE_Q, HI_WAKE_ROW = 18, 19
HOP_I_COLS = 32  # a power of two: a row start is a shift
# Bits of hop_i[:, HI_FLAGS].
FLAG_IN_ORDER = 1  # the hop's arrivals come in time order: no calendar event needed
FLAG_SLEEPS = 2  # its station sleeps when idle: an arrival finding it idle pays a wake-up
FLAG_BATCHES = 4  # its station pays a cost per batch it takes (see twin.path.Station)
FLAG_READER = 8  # the first stage of a reader station: an arrival joins its next read
FLAG_STALLS = 16  # a wake-up here may come late, the likelier the longer its station slept
FLAG_LINGERS = 32  # the hop leaves work on its server after the message moves on
FLAG_LINGERS_PER_BATCH = 64  # ... only if the message leads its batch (slot_i[:, SI_LED])
FLAG_ALLOWANCE = 128  # the hop takes credit from a token bucket (HI_ALLOWANCE, hop_allowance_us)
FLAG_BATCH_PER_CONNECTION = 256  # its station's batches are per connection (slot_i[:, SI_CONN])
FLAG_HOLDS = 512  # its station holds the message through the next hop's delay (Hop.holds)
FLAG_LINGER_YIELDS = 1024  # its linger keeps the station awake, no server held (Hop.linger_yields)
FLAG_OWN_WAKE = 2048  # a wake-up of its own in place of its station's (HI_WAKE_Q, HI_WAKE_ROW)
FLAG_CONTINUES = 4096  # the message keeps its server into the next hop (Hop.continues)
FLAG_HICCUPS = 8192  # its station's vCPU is taken now and then (twin.path.Hiccups, _hiccup.finish)
# Columns of the per-station wake-up arrays (read only at stations flagged FLAG_SLEEPS):
# station_wake_i holds the wake-up's quantile table start and empirical row (-1: none), then
# the stall's (drawn at hops flagged FLAG_STALLS, see twin.path.Station.stall), then
# the cost of each batch the server takes (drawn at stations flagged FLAG_BATCHES;
# batch_taken_us[station, connection] holds when it took its current one, connection 0 unless
# it batches per connection); station_cold the cold start's size (us),
# the inverse of its idle time constant (1/us), how long the woken server lingers busy after
# the message leaves (us), the size of that linger's cold part (us), and the share of the drawn
# wake-up a vCPU woken before it halted saves and the inverse of its halt time (1/us), then
# the host's halt polling (twin.path.HaltPolling: its maximum window, us, 0 for none; growth
# factor; first window, us; shrink divisor, 0 to reset), the woken thread's work added to
# every wake-up, never scaled (us), and 1 where its stall's odds are alike at every wake-up.
# station_poll_us: each station's current polling window (us).
# station_held_us: when each station's last hold ends (twin.path.Hop.holds): it sleeps only from
# the later of that and its servers freeing.
WI_Q, WI_ROW, WI_STALL_Q, WI_STALL_ROW, WI_BATCH_Q, WI_BATCH_ROW = 0, 1, 2, 3, 4, 5
(
    WC_COLD, WC_INV_TAU, WC_LINGER, WC_LINGER_COLD, WC_HALT_SHARE, WC_INV_HALT_TAU,
    WC_POLL_MAX, WC_POLL_GROW, WC_POLL_START, WC_POLL_SHRINK, WC_WAKE_WORK, WC_STALL_EVERY,
) = range(12)  # fmt: skip
# Columns of allowance_f, one row per token bucket (twin.path.Allowance): its depth, the credit
# owed to it (depth less content, plus what messages waiting for it still need: it drains at one
# microsecond per microsecond) and when that was last updated.
AL_DEPTH, AL_OWED, AL_OWED_AT = 0, 1, 2

# Columns of the per-slot arrays: slot_f holds, from SF_SPAN on, when each span opened.
SF_ENTER, SF_SEND, SF_NEXT_START, SF_EXIT, SF_SPAN = 0, 1, 2, 3, 4  # float64 slot_f
# int64 slot_i; SI_LED: whether the message took a new batch at the last batching station;
# SI_CONN: the connection its cycle travels on; SI_STALLED: 1 while it waits out a stall;
# SI_WAITING: 1 while a closed loop's account, free, waits for its turn (in_turn).
# SI_REQUEST: in a replay, the request the slot carries (its row of replay_f).
SI_HOP, SI_MSG, SI_RECORD, SI_AUX, SI_NEXT, SI_LED, SI_CONN, SI_STALLED, SI_WAITING = range(9)
SI_REQUEST = 9
SLOT_F_COLS, SLOT_I_COLS = SF_SPAN + MAX_SPANS, 10
HOP_START = -1  # slot_i[:, SI_HOP] value for "a cycle starts at the slot's event time"
# slot_i[:, SI_HOP] values of a reader's events: the slot (first of a read) triggers the read
# of station SI_AUX; the slot resumes its walk at hop SI_AUX (it has left the reader).
READ_EVENT, RESUME = -2, -3
# Columns of the per-station reader state: reader_i the read being gathered (first and last
# slot of its linked list through slot_i[:, SI_NEXT], and its length: 0 = none), reader_f its
# poll time and the per-read work of its first stage (drawn when the poll is scheduled: the
# read takes what arrived by the end of it, when the read call is made).
RI_HEAD, RI_TAIL, RI_COUNT = 0, 1, 2
RF_POLL, RF_WORK = 0, 1
# A calendar key is ``seq << SLOT_BITS | slot``: 2**20 slots in flight and 2**43 events per run
# (a 24-hour run at 400k msg/s schedules about 2**39).
SLOT_BITS = 20
MAX_SLOTS = 1 << SLOT_BITS
SLOT_MASK = MAX_SLOTS - 1

# Entries of the scalar state arrays.
F_NEXT_CYCLE, F_RTT_SUM, F_RTT_MAX = 0, 1, 2
FSTATE_LEN = 3
# I_TURN: the account whose cycle a closed loop in turn sends next; I_ARRIVAL: in a replay, the
# next request of the given arrival times to send.
I_HEAP_N, I_FREE_N, I_SEQ, I_MESSAGES, I_STARTED, I_GROUP_LEFT, I_CYCLES, I_TURN = range(8)
# I_REJECTED: recorded messages a throttle rejected.
I_ARRIVAL, I_REJECTED = 8, 9
ISTATE_LEN = 10
# Columns of replay_f, one row per request of a replay: when it left the matching engine (the
# exchange's timestamp; the path's exchange hop; a reject's: when the throttle refused it),
# when its reply reached the client, and 1 where a throttle rejected it.
# RF_MODEL: when a feed path's update reached the client's model (the path's model hop).
RF_EXCH, RF_DONE, RF_REJECTED, RF_MODEL = 0, 1, 2, 3
# The throttle (twin.protections.Throttle): throttle_p holds its refill rate (tokens/us), burst,
# how long a rejected session is cut off (us; 0: reject only) and each kind's weight (new,
# cancel, modify); throttle_f one row per bucket (per session: one per connection): its tokens,
# when they were counted, and until when its session is cut off.
TP_RATE, TP_BURST, TP_DISCONNECT, TP_WEIGHT = 0, 1, 2, 3
TF_TOKENS, TF_AT, TF_CUT = 0, 1, 2

_INF = np.inf


@njit(cache=True)
def _earliest_to_root(heap_t: np.ndarray, heap_k: np.ndarray, heap_n: int) -> None:
    """On an exact tie at the root, bring the earliest-scheduled event there.

    The heap orders by time only; the events at the root's time all sit in a subtree under the
    root, and swapping equal times keeps the heap ordered, so the smallest key (earliest
    scheduled) among them is swapped in. Rare (ties need exactly equal times), so it is kept out
    of the kernel's loop, whose registers it would otherwise share.
    """
    top_t = heap_t[0]
    best = 0
    for i in range(1, heap_n):
        if heap_t[i] == top_t and heap_k[i] < heap_k[best]:
            best = i
    root_k = heap_k[0]
    heap_k[0] = heap_k[best]
    heap_k[best] = root_k


@njit(cache=True)
def _group_size(burst, geometric, s0, s1, s2, s3):  # noqa: ANN001, ANN202
    """Cycles in the next group: ``burst``, or a geometric number with mean ``burst``."""
    if not geometric or burst == 1:
        return burst, s0, s1, s2, s3
    u, s0, s1, s2, s3 = _uniform(s0, s1, s2, s3)
    return 1 + int(np.floor(np.log(1.0 - u) / np.log(1.0 - 1.0 / burst))), s0, s1, s2, s3


@njit(cache=True)
def _close_spans(closes, t, slot_f, slot, span_counts):  # noqa: ANN001, ANN202
    """Record the spans of bit mask ``closes`` that a recorded message ends at ``t``."""
    for b in range(MAX_SPANS):
        if (closes >> b) & 1:
            span = t - slot_f[slot, SF_SPAN + b]
            span_counts[b, counts_index(np.int64(np.rint(span * 1e3)))] += 1


@njit(cache=True)
def _open_spans(opens, t, slot_f, slot):  # noqa: ANN001, ANN202
    """Open at ``t`` the spans whose bits are set in ``opens`` (a hop's HI_SPAN_OPEN)."""
    if opens != 0:
        for b in range(MAX_SPANS):
            if (opens >> b) & 1:
                slot_f[slot, SF_SPAN + b] = t


@njit(cache=True)
def _push(heap_t: np.ndarray, heap_k: np.ndarray, heap_n: int, t: float, key: int) -> int:
    """Push (sift up) an event whose key is the largest so far; return the new heap size."""
    j = heap_n
    while j > 0:
        parent = (j - 1) >> 1
        if heap_t[parent] <= t:
            break
        heap_t[j] = heap_t[parent]
        heap_k[j] = heap_k[parent]
        j = parent
    heap_t[j] = t
    heap_k[j] = key
    return heap_n + 1


@njit(cache=True)
def _take_allowance(allowance_f, a, t, cost):  # noqa: ANN001, ANN202
    """Take ``cost`` of bucket ``a``'s credit for a message arriving at ``t``; return when the
    credit is there (``t`` or later: the refill it waits for, in arrival order)."""
    owed = allowance_f[a, AL_OWED] - (t - allowance_f[a, AL_OWED_AT])
    if owed < 0.0:
        owed = 0.0
    allowance_f[a, AL_OWED] = owed + cost
    allowance_f[a, AL_OWED_AT] = t
    short = owed + cost - allowance_f[a, AL_DEPTH]
    return t + short if short > 0.0 else t


@njit(cache=True)
def _draw(q, row, quantiles, tables, table_lengths, s0, s1, s2, s3):  # noqa: ANN001, ANN202
    """One draw from a quantile table starting at ``q`` (plus a resample of empirical ``row``)."""
    g, f, s0, s1, s2, s3 = grid_point(s0, s1, s2, s3)
    q = np.uint64(q) + g
    lo = quantiles[q]
    x = lo + (quantiles[q + np.uint64(1)] - lo) * f
    if row >= 0:
        u, s0, s1, s2, s3 = _uniform(s0, s1, s2, s3)
        n_row = table_lengths[row]
        x += tables[row, min(int(u * n_row), n_row - 1)]
    return x, s0, s1, s2, s3


@njit(cache=True)
def _polled(st, idle, station_cold, station_poll_us):  # noqa: ANN001, ANN202
    """Whether the host still polled the station's halted vCPU when a wake-up came after
    ``idle`` us; adapts its window to that halt (twin.path.HaltPolling)."""
    max_us = station_cold[st, WC_POLL_MAX]
    if max_us <= 0:
        return False
    window = station_poll_us[st]
    if idle <= window:
        return True
    if window > 0 and idle > max_us:
        shrink = station_cold[st, WC_POLL_SHRINK]
        station_poll_us[st] = window / shrink if shrink > 0 else 0.0
    elif window < max_us and idle < max_us:
        grown = max(window * station_cold[st, WC_POLL_GROW], station_cold[st, WC_POLL_START])
        station_poll_us[st] = min(grown, max_us)
    return False


@njit(cache=True)
def _wake_scale(st, idle, station_cold, station_poll_us, own):  # noqa: ANN001, ANN202
    """``(scale, cooled)`` of a station woken after ``idle`` us asleep: the share of its drawn
    wake-up it pays, ``1 - h * exp(-idle / halt_tau)`` or ``1 - h`` if the host still polled
    its vCPU, ``h`` the station's halt share, or 1 for a hop's ``own`` wake-up, all of it the
    halt's (1 without a halt share); how far it cooled, ``1 - exp(-idle / cold_tau)``, 0 if
    polled (the vCPU never left its core). Adapts the polling window."""
    share = station_cold[st, WC_HALT_SHARE]
    cooled = -np.expm1(-idle * station_cold[st, WC_INV_TAU])
    if share <= 0:
        return 1.0, cooled
    if own:
        share = 1.0
    if _polled(st, idle, station_cold, station_poll_us):
        return 1.0 - share, 0.0
    return 1.0 - share * np.exp(-idle * station_cold[st, WC_INV_HALT_TAU]), cooled


@njit(cache=True)
def _stall(  # noqa: PLR0913
    st, idle, station_wake_i, station_cold, station_poll_us, quantiles, tables, table_lengths,
    s0, s1, s2, s3,
):  # noqa: ANN001, ANN202  # fmt: skip
    """The stall a station waking after ``idle`` us may meet: with probability
    ``1 - exp(-idle / cold_tau)`` a draw of its stall distribution, else nothing (nothing
    either within the host's polling window: its vCPU never left its core); plus a draw at
    every wake-up where the station's stall comes alike at every one (``WC_STALL_EVERY``)."""
    q, row = station_wake_i[st, WI_STALL_Q], station_wake_i[st, WI_STALL_ROW]
    u, s0, s1, s2, s3 = _uniform(s0, s1, s2, s3)
    late = 0.0
    if idle > station_poll_us[st] and u < -np.expm1(-idle * station_cold[st, WC_INV_TAU]):
        late, s0, s1, s2, s3 = _draw(q, row, quantiles, tables, table_lengths, s0, s1, s2, s3)
    if station_cold[st, WC_STALL_EVERY] != 0.0:
        x, s0, s1, s2, s3 = _draw(q, row, quantiles, tables, table_lengths, s0, s1, s2, s3)
        late += x
    return late, s0, s1, s2, s3


@njit(cache=True)
def _first_work(  # noqa: PLR0913
    first,
    st,
    idle,
    hop_i,
    station_wake_i,
    station_cold,
    station_poll_us,
    quantiles,
    tables,
    table_lengths,
    s0,
    s1,
    s2,
    s3,
):  # noqa: ANN001, ANN202
    """The per-read work of a reader's first stage (poll -> read), with the wake-up and cold
    start of a thread that sat idle ``idle`` us: the read call comes at its end."""
    work, s0, s1, s2, s3 = _draw(
        hop_i[first, HI_READ_Q], hop_i[first, HI_READ_ROW], quantiles, tables, table_lengths,
        s0, s1, s2, s3,
    )  # fmt: skip
    if idle > 0:
        x, s0, s1, s2, s3 = _draw(
            station_wake_i[st, WI_Q], station_wake_i[st, WI_ROW], quantiles, tables,
            table_lengths, s0, s1, s2, s3,
        )  # fmt: skip
        scale, cooled = _wake_scale(st, idle, station_cold, station_poll_us, False)
        work += x * scale + station_cold[st, WC_WAKE_WORK] + station_cold[st, WC_COLD] * cooled
    return work, s0, s1, s2, s3


@njit(cache=True)
def _read(  # noqa: PLR0913
    first,
    hop_i,
    station_wake_i,
    station_cold,
    hop_record_us,
    server_free_us,
    reader_i,
    reader_f,
    quantiles,
    tables,
    table_lengths,
    slot_f,
    slot_i,
    span_counts,
    hop_sum_us,
    busy_us,
    heap_t,
    heap_k,
    heap_n,
    seq,
    warmup_us,
    end_us,
    s0,
    s1,
    s2,
    s3,
    replay_f,
    model_hop,
):  # noqa: ANN001, ANN202
    """Take the read gathered at the reader whose first stage is hop ``first`` (see
    twin.path.Station.reader): work out
    each member's stages, record their hop times and spans, free the thread after the read and
    its bookkeeping, and schedule every member to resume its walk as it leaves the last stage.
    Returns the calendar's size and sequence number and the generator's state."""
    st = hop_i[first, HI_STATION]
    slot = reader_i[st, RI_HEAD]
    n = reader_i[st, RI_COUNT]
    reader_i[st, RI_COUNT] = 0
    poll = reader_f[st, RF_POLL]
    last = hop_i[first, HI_READ_LAST]
    # A TLS record per run of consecutive messages of one burst (they share a send time).
    records = 1
    m = slot
    for _ in range(n - 1):
        nxt = slot_i[m, SI_NEXT]
        if slot_f[nxt, SF_SEND] != slot_f[m, SF_SEND]:
            records += 1
        m = nxt
    t = poll
    for h in range(first, last + 1):
        start = t
        if h == first:
            work = reader_f[st, RF_WORK]
        else:
            work, s0, s1, s2, s3 = _draw(
                hop_i[h, HI_READ_Q], hop_i[h, HI_READ_ROW], quantiles, tables, table_lengths,
                s0, s1, s2, s3,
            )  # fmt: skip
        work += hop_record_us[h] * (records - 1)
        whole = hop_i[h, HI_WHOLE_READ] != 0
        opens = hop_i[h, HI_SPAN_OPEN]
        closes = hop_i[h, HI_SPAN_CLOSE]
        done = start + work
        m = slot
        for _ in range(n):
            x, s0, s1, s2, s3 = _draw(
                hop_i[h, HI_SERVICE_Q], hop_i[h, HI_SERVICE_ROW], quantiles, tables,
                table_lengths, s0, s1, s2, s3,
            )  # fmt: skip
            done += x
            slot_f[m, SF_EXIT] = done  # this stage's exit, unless it is a whole-read stage
            m = slot_i[m, SI_NEXT]
        m = slot
        for _ in range(n):
            left = done if whole else slot_f[m, SF_EXIT]
            for b in range(MAX_SPANS):
                if (opens >> b) & 1:
                    slot_f[m, SF_SPAN + b] = start
            if slot_i[m, SI_RECORD] != 0:
                hop_sum_us[h] += left - slot_f[m, SF_ENTER]
                for b in range(MAX_SPANS):
                    if (closes >> b) & 1:
                        span = left - slot_f[m, SF_SPAN + b]
                        span_counts[b, counts_index(np.int64(np.rint(span * 1e3)))] += 1
            slot_f[m, SF_ENTER] = left  # the next stage's entry
            if h == model_hop and replay_f.shape[0] > 0:
                replay_f[slot_i[m, SI_REQUEST], RF_MODEL] = left
            m = slot_i[m, SI_NEXT]
        t = done
    linger = station_cold[st, WC_LINGER]
    if warmup_us <= poll < end_us:
        busy_us[st] += t - poll + linger
    server_free_us[hop_i[first, HI_SERVER]] = t + linger
    m = slot
    for _ in range(n):
        nxt = slot_i[m, SI_NEXT]
        slot_i[m, SI_HOP] = RESUME
        slot_i[m, SI_AUX] = last + 1
        heap_n = _push(heap_t, heap_k, heap_n, slot_f[m, SF_ENTER], (seq << SLOT_BITS) | m)
        seq += 1
        m = nxt
    return heap_n, seq, s0, s1, s2, s3


@njit(cache=True)
def run_kernel(  # noqa: PLR0912, PLR0913, PLR0915, C901
    hop_i: np.ndarray,
    station_next: np.ndarray,
    station_wake_i: np.ndarray,
    station_cold: np.ndarray,
    server_free_us: np.ndarray,
    batch_taken_us: np.ndarray,
    quantiles: np.ndarray,
    tables: np.ndarray,
    table_lengths: np.ndarray,
    closed_loop: bool,
    in_turn: bool,
    poisson: bool,
    mean_gap_us: float,
    period_us: float,
    warmup_us: float,
    end_us: float,
    per_cycle: int,
    burst: int,
    geometric_bursts: bool,
    rng: np.ndarray,
    fstate: np.ndarray,
    istate: np.ndarray,
    heap_t: np.ndarray,
    heap_k: np.ndarray,
    free_slots: np.ndarray,
    slot_f: np.ndarray,
    slot_i: np.ndarray,
    counts: np.ndarray,
    hop_sum_us: np.ndarray,
    busy_us: np.ndarray,
    horizon_us: float,
    hop_record_us: np.ndarray,
    reader_i: np.ndarray,
    reader_f: np.ndarray,
    span_counts: np.ndarray,
    hop_allowance_us: np.ndarray,
    allowance_f: np.ndarray,
    connections: int,
    station_held_us: np.ndarray,
    station_poll_us: np.ndarray,
    hiccup_f: np.ndarray,
    hiccup_rng: np.ndarray,
    hiccup_gap_us: np.ndarray,
    hiccup_q: np.ndarray,
    hiccup_row: np.ndarray,
    arrivals_us: np.ndarray,
    arrival_conn: np.ndarray,
    exchange_hop: int,
    replay_f: np.ndarray,
    arrival_kind: np.ndarray,
    throttle_hop: int,
    reject_hop: int,
    throttle_per_session: bool,
    throttle_p: np.ndarray,
    throttle_f: np.ndarray,
    model_hop: int,
) -> int:
    """Advance the simulation until done, paused at ``horizon_us``, or out of slots.

    A replay gives its cycles' start times (``arrivals_us``, sorted, one message each, on the
    connections ``arrival_conn``) in place of the generated schedule, and gets each request's
    exchange and reply times in ``replay_f``; ``arrivals_us`` empty: the generated schedule.
    """
    replay = arrivals_us.shape[0] > 0
    n_hops = hop_i.shape[0]
    # Flat views of the row-major tables: a row start is a shift, where 2-D indexing multiplies
    # by a run-time row length on every access.
    hop_il = hop_i.reshape(hop_i.size)
    s0, s1, s2, s3 = rng[0], rng[1], rng[2], rng[3]
    heap_n = istate[I_HEAP_N]
    free_n = istate[I_FREE_N]
    seq = istate[I_SEQ]
    messages = istate[I_MESSAGES]
    next_cycle = fstate[F_NEXT_CYCLE]
    group_left = istate[I_GROUP_LEFT]  # cycles of the current group still to start
    rtt_sum = fstate[F_RTT_SUM]
    rtt_max = fstate[F_RTT_MAX]

    if istate[I_STARTED] == 0:
        istate[I_STARTED] = 1
        if closed_loop:
            # One slot per account, each starting at a random phase of its pacing period (in
            # turn, the rotation follows the phases).
            for a in range(slot_f.shape[0]):
                u, s0, s1, s2, s3 = _uniform(s0, s1, s2, s3)
                slot_f[a, SF_NEXT_START] = u * period_us
            if in_turn:
                slot_f[:, SF_NEXT_START] = np.sort(slot_f[:, SF_NEXT_START])
            for a in range(slot_f.shape[0]):
                phase = slot_f[a, SF_NEXT_START]
                slot_i[a, SI_CONN] = a
                if phase < end_us:
                    slot_i[a, SI_HOP] = HOP_START
                    heap_n = _push(heap_t, heap_k, heap_n, phase, (seq << SLOT_BITS) | a)
                    seq += 1
            next_cycle = _INF
        elif replay:
            next_cycle = arrivals_us[0]
            group_left = 1
        else:
            # Groups of ``burst`` cycles arrive ``burst`` times less often (the mean rate holds).
            gap = mean_gap_us * burst
            if poisson:
                e, s0, s1, s2, s3 = _exponential(s0, s1, s2, s3)
                gap = mean_gap_us * burst * e
            next_cycle = gap
            group_left, s0, s1, s2, s3 = _group_size(burst, geometric_bursts, s0, s1, s2, s3)

    status = STATUS_DONE
    while True:
        top_t = heap_t[0]  # +inf when the calendar is empty
        if next_cycle < end_us and next_cycle <= top_t:
            if next_cycle >= horizon_us:
                status = STATUS_PAUSED
                break
            if free_n == 0:
                status = STATUS_FULL
                break
            free_n -= 1
            slot = np.uint64(free_slots[free_n])
            from_heap = False
            t = next_cycle
            hop = HOP_START
            msg = 0
            record = False
            enter = t
            send = t
            if replay:  # the given request, on its own connection
                pos = istate[I_ARRIVAL]
                slot_i[slot, SI_CONN] = arrival_conn[pos]
                slot_i[slot, SI_REQUEST] = pos
                pos += 1
                istate[I_ARRIVAL] = pos
                next_cycle = arrivals_us[pos] if pos < arrivals_us.shape[0] else _INF
            else:
                # Cycles are dealt to the connections in turn.
                slot_i[slot, SI_CONN] = istate[I_CYCLES] % connections
            istate[I_CYCLES] += 1
            group_left -= 1
            if replay:
                group_left = 1
            elif group_left == 0:  # the group is out: the next one's arrival
                gap = mean_gap_us * burst
                if poisson:
                    e, s0, s1, s2, s3 = _exponential(s0, s1, s2, s3)
                    gap = mean_gap_us * burst * e
                next_cycle += gap
                group_left, s0, s1, s2, s3 = _group_size(burst, geometric_bursts, s0, s1, s2, s3)
            other_t = top_t
        else:
            if heap_n == 0:
                status = STATUS_DONE
                break
            if top_t >= horizon_us:
                status = STATUS_PAUSED
                break
            # Earliest other pending event: the root's children.
            other_t = min(heap_t[1], heap_t[2])
            if other_t == top_t:
                _earliest_to_root(heap_t, heap_k, heap_n)
            slot = np.uint64(heap_k[0] & SLOT_MASK)
            from_heap = True
            t = top_t
            hop = slot_i[slot, SI_HOP]
            msg = slot_i[slot, SI_MSG]
            record = slot_i[slot, SI_RECORD] != 0
            enter = slot_f[slot, SF_ENTER]
            send = slot_f[slot, SF_SEND]
        if next_cycle < end_us and next_cycle < other_t:
            other_t = next_cycle

        keep = False
        parked = False  # waiting in a reader's next read, with no event of its own
        holder = np.int64(-1)  # the station holding the message through the next hop's delay
        while True:
            if hop == HOP_START:
                if in_turn and msg == 0:
                    # Taken in time order (``t <= other_t``): from the calendar, or inline only
                    # while no other event comes first.
                    if istate[I_TURN] != np.int64(slot):
                        slot_i[slot, SI_WAITING] = 1  # free, its turn not yet come
                        slot_i[slot, SI_HOP] = HOP_START
                        slot_i[slot, SI_MSG] = 0
                        parked = True
                        break
                    turn = (np.int64(slot) + 1) % slot_f.shape[0]
                    istate[I_TURN] = turn
                    if slot_i[turn, SI_WAITING] != 0:  # it sends next, now
                        slot_i[turn, SI_WAITING] = 0
                        heap_n = _push(heap_t, heap_k, heap_n, t, (seq << SLOT_BITS) | turn)
                        seq += 1
                        other_t = t
                send = t
                record = warmup_us <= t < end_us
                hop = 0
            elif hop == RESUME:  # it left a reader: walk on from the hop after its stages
                hop = slot_i[slot, SI_AUX]
            elif hop == READ_EVENT:
                heap_n, seq, s0, s1, s2, s3 = _read(
                    slot_i[slot, SI_AUX], hop_i, station_wake_i, station_cold, hop_record_us,
                    server_free_us, reader_i, reader_f, quantiles, tables, table_lengths,
                    slot_f, slot_i, span_counts, hop_sum_us, busy_us, heap_t, heap_k, heap_n,
                    seq, warmup_us, end_us, s0, s1, s2, s3, replay_f, model_hop,
                )  # fmt: skip
                parked = True  # every member, this slot too, now has a resume event
                break
            elif hop_il[np.uint64(hop) * np.uint64(HOP_I_COLS) + np.uint64(HI_FLAGS)] & FLAG_READER:
                # Join the reader's next read: the first to arrive schedules its read call, just
                # after the poll (max(now, thread free)) and its first stage's per-read work, so
                # that whatever arrives by that instant is in it.
                hi = np.uint64(hop) * np.uint64(HOP_I_COLS)
                st = np.uint64(hop_il[hi + np.uint64(HI_STATION)])
                slot_f[slot, SF_ENTER] = enter
                slot_f[slot, SF_SEND] = send
                slot_i[slot, SI_MSG] = msg
                slot_i[slot, SI_RECORD] = 1 if record else 0
                slot_i[slot, SI_NEXT] = -1
                count = reader_i[st, RI_COUNT]
                reader_i[st, RI_COUNT] = count + 1
                if count > 0:
                    slot_i[reader_i[st, RI_TAIL], SI_NEXT] = np.int64(slot)
                    reader_i[st, RI_TAIL] = np.int64(slot)
                    parked = True
                    break
                reader_i[st, RI_HEAD] = np.int64(slot)
                reader_i[st, RI_TAIL] = np.int64(slot)
                free_t = server_free_us[hop_il[hi + np.uint64(HI_SERVER)]]
                poll = t if t > free_t else free_t
                work, s0, s1, s2, s3 = _first_work(
                    hop, st, t - free_t if t > free_t else 0.0, hop_i, station_wake_i,
                    station_cold, station_poll_us, quantiles, tables, table_lengths,
                    s0, s1, s2, s3,
                )  # fmt: skip
                reader_f[st, RF_POLL] = poll
                reader_f[st, RF_WORK] = work
                slot_i[slot, SI_AUX] = hop
                t = np.nextafter(poll + work, _INF)
                hop = READ_EVENT
                keep = True
                break
            else:
                # Arrival at the station of ``hop`` (Kiefer-Wolfowitz step). Any server free by
                # ``t`` serves at ``t``: try the next one round-robin (the one used longest ago,
                # nearly always free below saturation) before scanning for the earliest free.
                # Which free server is taken cannot matter: all later arrivals at this station
                # are at or after ``t``, so they see each free server as free.
                if hop == throttle_hop and slot_i[slot, SI_STALLED] == 0:
                    # The venue's lazy-fill token bucket: refill, then take the kind's weight
                    # or reject (the gateway answers it at its reply hop, now).
                    b = slot_i[slot, SI_CONN] if throttle_per_session else 0
                    kind = arrival_kind[slot_i[slot, SI_REQUEST]] if replay else msg
                    tokens = (
                        throttle_f[b, TF_TOKENS] + (t - throttle_f[b, TF_AT]) * throttle_p[TP_RATE]
                    )
                    tokens = min(tokens, throttle_p[TP_BURST])
                    throttle_f[b, TF_AT] = t
                    weight = throttle_p[TP_WEIGHT + kind]
                    if t < throttle_f[b, TF_CUT] or tokens < weight:
                        throttle_f[b, TF_TOKENS] = tokens
                        if throttle_p[TP_DISCONNECT] > 0 and t >= throttle_f[b, TF_CUT]:
                            throttle_f[b, TF_CUT] = t + throttle_p[TP_DISCONNECT]
                        if record:
                            istate[I_REJECTED] += 1
                        if replay:
                            replay_f[slot_i[slot, SI_REQUEST], RF_REJECTED] = 1.0
                            replay_f[slot_i[slot, SI_REQUEST], RF_EXCH] = t
                        hop = reject_hop
                        enter = t
                        continue
                    throttle_f[b, TF_TOKENS] = tokens - weight
                h = np.uint64(hop)  # unsigned: no negative-index fix-up on each access
                hi = h * np.uint64(HOP_I_COLS)  # row start in the flat hop array
                st = np.uint64(hop_il[hi + np.uint64(HI_STATION)])
                flags = hop_il[hi + np.uint64(HI_FLAGS)]
                off = np.uint64(hop_il[hi + np.uint64(HI_SERVER)])
                nserv = np.uint64(hop_il[hi + np.uint64(HI_SERVERS)])
                if flags & FLAG_STALLS:
                    if slot_i[slot, SI_STALLED] != 0:
                        slot_i[slot, SI_STALLED] = 0  # its stall is over: it arrives now
                    else:
                        idle_since = server_free_us[off]
                        for j in range(off + np.uint64(1), off + nserv):
                            idle_since = max(idle_since, server_free_us[j])
                        idle_since = max(idle_since, station_held_us[st])
                        if t > idle_since:
                            # Waking the sleeping station, it may stall: it arrives that much
                            # later, the servers free for others meanwhile.
                            x, s0, s1, s2, s3 = _stall(
                                st, t - idle_since, station_wake_i, station_cold,
                                station_poll_us, quantiles, tables, table_lengths,
                                s0, s1, s2, s3,
                            )  # fmt: skip
                            if x > 0:
                                slot_i[slot, SI_STALLED] = 1
                                t += x
                                if t < other_t:
                                    continue
                                keep = True
                                break
                if flags & FLAG_ALLOWANCE:
                    t = _take_allowance(
                        allowance_f, hop_il[hi + np.uint64(HI_ALLOWANCE)], t, hop_allowance_us[h]
                    )
                nxt = np.uint64(station_next[st])
                pick = off + nxt
                free_t = server_free_us[pick]
                if free_t > t and nserv > np.uint64(1):
                    for j in range(off, off + nserv):
                        if server_free_us[j] < free_t:
                            free_t = server_free_us[j]
                            pick = np.uint64(j)
                start = t if t > free_t else free_t
                nxt += np.uint64(1)
                station_next[st] = 0 if nxt == nserv else np.int64(nxt)
                g, f, s0, s1, s2, s3 = grid_point(s0, s1, s2, s3)
                q = np.uint64(hop_il[hi + np.uint64(HI_SERVICE_Q)]) + g
                lo = quantiles[q]
                s = lo + (quantiles[q + np.uint64(1)] - lo) * f
                row = hop_il[hi + np.uint64(HI_SERVICE_ROW)]
                if row >= 0:
                    u, s0, s1, s2, s3 = _uniform(s0, s1, s2, s3)
                    n_row = table_lengths[row]
                    s += tables[row, min(int(u * n_row), n_row - 1)]
                linger = 0.0
                if flags & FLAG_BATCHES:
                    slot_i[slot, SI_LED] = 0
                    conn = 0
                    if flags & FLAG_BATCH_PER_CONNECTION:
                        visit = hop_il[hi + np.uint64(HI_VISIT)]
                        conn = visit * connections + slot_i[slot, SI_CONN]
                    if t > batch_taken_us[st, conn]:
                        # Arrived after the current batch was taken: it starts the next one.
                        x, s0, s1, s2, s3 = _draw(
                            station_wake_i[st, WI_BATCH_Q], station_wake_i[st, WI_BATCH_ROW],
                            quantiles, tables, table_lengths, s0, s1, s2, s3,
                        )  # fmt: skip
                        s += x
                        batch_taken_us[st, conn] = start
                        slot_i[slot, SI_LED] = 1
                idle_since = free_t
                if flags & FLAG_SLEEPS and nserv > np.uint64(1):
                    # It sleeps only when every server is idle: since the last one freed.
                    for j in range(off, off + nserv):
                        if server_free_us[j] > idle_since:
                            idle_since = server_free_us[j]
                if flags & FLAG_HOLDS:
                    holder = np.int64(st)
                if flags & FLAG_SLEEPS:
                    idle_since = max(idle_since, station_held_us[st])  # awake while it holds
                if flags & FLAG_SLEEPS and t > idle_since:
                    # The arrival wakes the sleeping station: a drawn wake-up plus a cold start
                    # growing with how long it sat idle.
                    gap = t - idle_since
                    g, f, s0, s1, s2, s3 = grid_point(s0, s1, s2, s3)
                    if flags & FLAG_OWN_WAKE:
                        q = np.uint64(hop_il[hi + np.uint64(HI_WAKE_Q)]) + g
                        row = hop_il[hi + np.uint64(HI_WAKE_ROW)]
                    else:
                        q = np.uint64(station_wake_i[st, WI_Q]) + g
                        row = station_wake_i[st, WI_ROW]
                    lo = quantiles[q]
                    woke = lo + (quantiles[q + np.uint64(1)] - lo) * f
                    if row >= 0:
                        u, s0, s1, s2, s3 = _uniform(s0, s1, s2, s3)
                        n_row = table_lengths[row]
                        woke += tables[row, min(int(u * n_row), n_row - 1)]
                    scale, cooled = _wake_scale(
                        st, gap, station_cold, station_poll_us, flags & FLAG_OWN_WAKE != 0
                    )
                    s += woke * scale + station_cold[st, WC_WAKE_WORK]
                    s += station_cold[st, WC_COLD] * cooled
                    linger = station_cold[st, WC_LINGER] + station_cold[st, WC_LINGER_COLD] * cooled
                if flags & FLAG_LINGERS and (
                    not flags & FLAG_LINGERS_PER_BATCH or slot_i[slot, SI_LED] != 0
                ):
                    x, s0, s1, s2, s3 = _draw(
                        hop_il[hi + np.uint64(HI_LINGER_Q)], hop_il[hi + np.uint64(HI_LINGER_ROW)],
                        quantiles, tables, table_lengths, s0, s1, s2, s3,
                    )  # fmt: skip
                    linger += x
                run_linger = 0.0  # lingers of the hops it continued from, left after the run
                while True:
                    if warmup_us <= start < end_us:
                        busy_us[st] += s + linger
                    if flags & FLAG_HICCUPS:  # stretched by its vCPU's hiccups
                        done_t = _finish(
                            st, start, s, hiccup_f, hiccup_rng, hiccup_gap_us, hiccup_q,
                            hiccup_row, tables, table_lengths,
                        )  # fmt: skip
                    else:
                        done_t = start + s
                    if flags & FLAG_LINGER_YIELDS:  # awake through it, no server held
                        station_held_us[st] = max(station_held_us[st], done_t + linger)
                        linger = 0.0
                    if replay and h == np.uint64(exchange_hop):
                        replay_f[slot_i[slot, SI_REQUEST], RF_EXCH] = done_t
                    if replay and h == np.uint64(model_hop):
                        replay_f[slot_i[slot, SI_REQUEST], RF_MODEL] = done_t
                    if record:
                        hop_sum_us[h] += done_t - enter
                        closes = hop_il[hi + np.uint64(HI_SPAN_CLOSE)]
                        if closes != 0:
                            _close_spans(closes, done_t, slot_f, slot, span_counts)
                    t = done_t
                    hop += 1
                    if not flags & FLAG_CONTINUES:
                        break
                    # It keeps the server into the next hop (at this station, met at once): the
                    # hop's own work and linger, no queue, no wake-up.
                    run_linger += linger
                    h = np.uint64(hop)
                    hi = h * np.uint64(HOP_I_COLS)
                    flags = hop_il[hi + np.uint64(HI_FLAGS)]
                    if flags & FLAG_HOLDS:
                        holder = np.int64(st)
                    enter = t
                    start = t
                    _open_spans(hop_il[hi + np.uint64(HI_SPAN_OPEN)], t, slot_f, slot)
                    s, s0, s1, s2, s3 = _draw(
                        hop_il[hi + np.uint64(HI_SERVICE_Q)],
                        hop_il[hi + np.uint64(HI_SERVICE_ROW)],
                        quantiles, tables, table_lengths, s0, s1, s2, s3,
                    )  # fmt: skip
                    linger = 0.0
                    if flags & FLAG_LINGERS and (
                        not flags & FLAG_LINGERS_PER_BATCH or slot_i[slot, SI_LED] != 0
                    ):
                        x, s0, s1, s2, s3 = _draw(
                            hop_il[hi + np.uint64(HI_LINGER_Q)],
                            hop_il[hi + np.uint64(HI_LINGER_ROW)],
                            quantiles, tables, table_lengths, s0, s1, s2, s3,
                        )  # fmt: skip
                        linger = x
                left_on_server = linger + run_linger
                if flags & FLAG_HICCUPS and left_on_server > 0:
                    server_free_us[pick] = _finish(
                        st, t, left_on_server, hiccup_f, hiccup_rng, hiccup_gap_us, hiccup_q,
                        hiccup_row, tables, table_lengths,
                    )  # fmt: skip
                else:
                    server_free_us[pick] = t + left_on_server
            # Walk the non-queueing parts up to the next station.
            while hop < n_hops:
                h = np.uint64(hop)
                hi = h * np.uint64(HOP_I_COLS)
                enter = t
                _open_spans(hop_il[hi + np.uint64(HI_SPAN_OPEN)], t, slot_f, slot)
                g, f, s0, s1, s2, s3 = grid_point(s0, s1, s2, s3)
                q = np.uint64(hop_il[hi + np.uint64(HI_DELAY_Q)]) + g
                lo = quantiles[q]
                x = lo + (quantiles[q + np.uint64(1)] - lo) * f
                row = hop_il[hi + np.uint64(HI_DELAY_ROW)]
                if row >= 0:
                    u, s0, s1, s2, s3 = _uniform(s0, s1, s2, s3)
                    n_row = table_lengths[row]
                    x += tables[row, min(int(u * n_row), n_row - 1)]
                t += x
                if holder >= 0:  # the station it left holds it awake until now
                    station_held_us[holder] = max(station_held_us[holder], t)
                    holder = np.int64(-1)
                if hop_il[hi + np.uint64(HI_STATION)] >= 0:
                    break
                if replay and h == np.uint64(model_hop):
                    replay_f[slot_i[slot, SI_REQUEST], RF_MODEL] = t
                if record:
                    hop_sum_us[h] += t - enter
                    closes = hop_il[hi + np.uint64(HI_SPAN_CLOSE)]
                    if closes != 0:
                        _close_spans(closes, t, slot_f, slot, span_counts)
                hop += 1
            if hop < n_hops:
                if (
                    t < other_t
                    or hop_il[np.uint64(hop) * np.uint64(HOP_I_COLS) + np.uint64(HI_FLAGS)]
                    & FLAG_IN_ORDER
                ):
                    continue  # this arrival is the next event anyway, or needs no calendar
                keep = True
                break
            # Round trip complete.
            if replay:
                replay_f[slot_i[slot, SI_REQUEST], RF_DONE] = t
            if record:
                rtt = t - send
                counts[msg, counts_index(np.int64(np.rint(rtt * 1e3)))] += 1
                messages += 1
                rtt_sum += rtt
                if rtt > rtt_max:
                    rtt_max = rtt
            msg += 1
            if msg < per_cycle:
                hop = HOP_START  # the cancel leaves as the ack arrives
                continue
            if closed_loop:
                next_start = slot_f[slot, SF_NEXT_START] + period_us
                slot_f[slot, SF_NEXT_START] = next_start
                # A late account sends at once; it stops once its next send (on schedule or
                # behind it) would fall after the window, exactly as twin.des does.
                if next_start < end_us and t < end_us:
                    if next_start > t:
                        t = next_start
                    msg = 0
                    hop = HOP_START
                    if in_turn and t > other_t:
                        keep = True  # its turn is taken in time order, from the calendar
                        break
                    continue
            break

        if parked:  # its slot stays taken; its event (if any) leaves the calendar
            if not from_heap:
                continue
            heap_n -= 1
            item_t = heap_t[heap_n]
            item_k = heap_k[heap_n]
            heap_t[heap_n] = _INF
            if heap_n == 0:
                heap_t[0] = _INF
                continue
        elif keep:
            slot_f[slot, SF_ENTER] = enter
            slot_f[slot, SF_SEND] = send
            slot_i[slot, SI_HOP] = hop
            slot_i[slot, SI_MSG] = msg
            slot_i[slot, SI_RECORD] = 1 if record else 0
            item_t = t
            item_k = (seq << SLOT_BITS) | np.int64(slot)
            seq += 1
            if not from_heap:
                # Push (sift up): the new key has the largest sequence number so far.
                j = heap_n
                heap_n += 1
                while j > 0:
                    parent = (j - 1) >> 1
                    if heap_t[parent] <= t:
                        break
                    heap_t[j] = heap_t[parent]
                    heap_k[j] = heap_k[parent]
                    j = parent
                heap_t[j] = item_t
                heap_k[j] = item_k
                continue
        else:
            if not closed_loop:
                free_slots[free_n] = np.int64(slot)
                free_n += 1
            if not from_heap:
                continue
            heap_n -= 1
            item_t = heap_t[heap_n]
            item_k = heap_k[heap_n]
            heap_t[heap_n] = _INF
            if heap_n == 0:
                heap_t[0] = _INF
                continue
        # Place the item at the root and sift down on time alone (exact ties are settled by
        # sequence number when they reach the root, above). Entries past the end are +inf, so
        # a missing child never wins and the loop needs no bounds tests; the smaller child is
        # chosen with selects rather than branches.
        # Unsigned positions spare Numba's negative-index fix-up on every access.
        pos = np.uint64(0)
        while True:
            left = pos + pos + np.uint64(1)
            lt = heap_t[left]
            rt = heap_t[left + np.uint64(1)]
            lk = heap_k[left]
            rk = heap_k[left + np.uint64(1)]
            right = rt < lt
            ct = rt if right else lt
            ck = rk if right else lk
            child = left + np.uint64(right)
            if ct >= item_t:
                break
            heap_t[pos] = ct
            heap_k[pos] = ck
            pos = child
        heap_t[pos] = item_t
        heap_k[pos] = item_k

    rng[0], rng[1], rng[2], rng[3] = s0, s1, s2, s3
    istate[I_HEAP_N] = heap_n
    istate[I_FREE_N] = free_n
    istate[I_SEQ] = seq
    istate[I_MESSAGES] = messages
    fstate[F_NEXT_CYCLE] = next_cycle
    istate[I_GROUP_LEFT] = group_left
    fstate[F_RTT_SUM] = rtt_sum
    fstate[F_RTT_MAX] = rtt_max
    return status
