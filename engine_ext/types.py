"""Every structured dtype and integer code of the matching engine, in one place.

The Numba kernels (``engine_ext._book``), the Python wrapper (``engine_ext.engine``), the
reference engine (``engine_ext.reference``) and the workload generator all speak in these
dtypes and codes, so a change here is a change of the wire format for all of them.

Units: prices are integer **ticks** (``price_ticks``), quantities integer **lots**
(``qty_lots``). There is no floating point anywhere in the engine.

Inbound messages (:data:`MSG_DTYPE`), one row per message:

* ``msg_type``   :data:`MSG_NEW`, :data:`MSG_CANCEL` or :data:`MSG_MODIFY`.
* ``side``       :data:`SIDE_BUY` or :data:`SIDE_SELL` (new orders only).
* ``order_type`` :data:`OT_GTC`, :data:`OT_IOC`, :data:`OT_FOK`, :data:`OT_MARKET` or
  :data:`OT_POST_ONLY` (new orders only). IOC and FOK carry a limit price; a market order's
  price is ignored.
* ``stp``        self-trade prevention mode of the *incoming* order (new orders only; a
  modified order keeps the mode it was entered with): :data:`STP_CANCEL_RESTING`,
  :data:`STP_CANCEL_INCOMING` or :data:`STP_CANCEL_BOTH`. No mode lets a self-trade happen.
* ``order_id``   client-chosen id in ``[0, max_order_id)``; unique among *live* orders (an id
  may be reused once its order is gone, which keeps the dense id table bounded for soaks).
* ``price_ticks``, ``qty_lots``: for a modify, the new price and the new *remaining* quantity.

Outbound events (:data:`EVENT_DTYPE`): every inbound message produces zero or more
:data:`EV_FILL` / :data:`EV_CANCELED` events followed by exactly one terminal event,
:data:`EV_ACK` (``code`` is an ``OUT_*`` outcome) or :data:`EV_REJECT` (``code`` is a ``REJ_*``
reason). ``seq`` increases by one per event across the whole engine.

* Fill: ``order_id``/``account``/``side`` are the taker's, ``counter_order_id``/
  ``counter_account`` the maker's, ``price_ticks`` is the **maker's** price, ``qty_lots`` the
  traded quantity, ``leaves_qty`` the taker's remaining and ``counter_leaves_qty`` the maker's.
* Canceled: a resting order removed by self-trade prevention; ``order_id`` is the resting order,
  ``counter_order_id`` the incoming one, ``qty_lots`` the quantity removed.
* Ack: ``qty_lots`` is the quantity this message cancelled (unfilled and not resting: an IOC
  remainder, a killed FOK, the lots a cancel removed, the reduction of a modify),
  ``leaves_qty`` what rests afterwards, ``price_ticks`` the order's price.
* Reject: ``qty_lots`` echoes the message's quantity; nothing in the book changed.

Validation order (both engines follow it, so reject reasons agree exactly):

1. all messages: ``msg_type`` -> ``symbol`` -> ``account`` -> ``order_id`` range;
2. new: ``side`` -> ``order_type`` -> ``stp`` -> ``qty > 0`` -> price sentinel (limit types) ->
   duplicate live id -> max order size -> price band -> exposure -> open orders and capacity
   (GTC/post-only) -> price window (limit types; centred on the reference price, it never moves) ->
   post-only would take -> FOK fillable;
3. cancel: live id -> same symbol -> same account;
4. modify: ``qty > 0`` -> price sentinel -> live id -> same symbol -> same account -> max
   order size -> price band -> exposure (only if the size grows) -> price window -> post-only
   would take.

Risk rules: an order larger than ``max_order_qty_lots`` is refused; a limit price further
than ``band_ticks`` from the symbol's reference price is refused; the **potential position**
of an (account, symbol), ``position + open_buy + qty`` for a buy and
``open_sell + qty - position`` for a sell, may not exceed ``exposure_limit_lots``; an order
that may rest (GTC, post-only) is refused while its (account, symbol) already has
``max_open_orders`` resting orders (a venue's per-symbol open-order limit, like Binance's
``MAX_NUM_ORDERS`` filter), so one account cannot fill the book for everyone.
"""

from __future__ import annotations

import numpy as np

# --- inbound message types -------------------------------------------------------------------
MSG_NEW = 0
MSG_CANCEL = 1
MSG_MODIFY = 2
N_MSG_TYPES = 3

SIDE_BUY = 0
SIDE_SELL = 1

OT_GTC = 0  # limit, good till cancelled: the remainder rests
OT_IOC = 1  # limit, immediate or cancel: the remainder is cancelled
OT_FOK = 2  # limit, fill or kill: all of it at once or nothing, book untouched
OT_MARKET = 3  # no limit: takes whatever is there, the remainder is cancelled
OT_POST_ONLY = 4  # limit that must not take: rejected if it would cross
N_ORDER_TYPES = 5

STP_CANCEL_RESTING = 0  # remove the resting own order, keep matching
STP_CANCEL_INCOMING = 1  # stop matching, cancel the incoming remainder
STP_CANCEL_BOTH = 2  # remove the resting own order and cancel the incoming remainder
N_STP_MODES = 3

# --- outbound event kinds --------------------------------------------------------------------
EV_ACK = 1
EV_REJECT = 2
EV_FILL = 3
EV_CANCELED = 4

# --- ack outcomes (code of an EV_ACK) --------------------------------------------------------
OUT_RESTED = 1  # new order: something rests (possibly after partial fills)
OUT_FILLED = 2  # new order: fully filled
OUT_EXPIRED = 3  # IOC / market: remainder cancelled (possibly all of it)
OUT_KILLED = 4  # FOK: not fully fillable, nothing done
OUT_STP = 5  # matching stopped by self-trade prevention, remainder cancelled
OUT_CANCELLED = 6  # cancel accepted
OUT_MODIFIED = 7  # modify accepted (leaves_qty says what rests)

# --- reject reasons (code of an EV_REJECT) ---------------------------------------------------
REJ_BAD_MSG_TYPE = 1
REJ_UNKNOWN_SYMBOL = 2
REJ_BAD_ACCOUNT = 3
REJ_BAD_ORDER_ID = 4
REJ_BAD_SIDE = 5
REJ_BAD_ORDER_TYPE = 6
REJ_BAD_STP = 7
REJ_BAD_QTY = 8
REJ_BAD_PRICE = 9
REJ_DUPLICATE_ID = 10
REJ_UNKNOWN_ORDER = 11
REJ_NOT_OWNER = 12
REJ_MAX_QTY = 13
REJ_PRICE_BAND = 14
REJ_EXPOSURE = 15
REJ_BOOK_FULL = 16
REJ_OUT_OF_WINDOW = 17
REJ_POST_ONLY_WOULD_TAKE = 18
REJ_MAX_OPEN_ORDERS = 19


# Prices are valid in (0, PRICE_LIMIT_TICKS); anything else (0, negatives, INT64_MIN/MAX used
# as "no price" sentinels) is a NaN-like price and rejected with REJ_BAD_PRICE.
PRICE_LIMIT_TICKS = 1 << 53
PRICE_NONE = np.iinfo(np.int64).min

# --- structured dtypes -----------------------------------------------------------------------
MSG_DTYPE = np.dtype(
    [
        ("order_id", np.int64),
        ("price_ticks", np.int64),
        ("qty_lots", np.int64),
        ("symbol", np.int32),
        ("account", np.int32),
        ("msg_type", np.uint8),
        ("side", np.uint8),
        ("order_type", np.uint8),
        ("stp", np.uint8),
    ],
    align=True,
)
"""One inbound message (new, cancel or modify)."""

EVENT_DTYPE = np.dtype(
    [
        ("seq", np.int64),
        ("msg_index", np.int64),
        ("order_id", np.int64),
        ("counter_order_id", np.int64),
        ("price_ticks", np.int64),
        ("qty_lots", np.int64),
        ("leaves_qty", np.int64),
        ("counter_leaves_qty", np.int64),
        ("symbol", np.int32),
        ("account", np.int32),
        ("counter_account", np.int32),
        ("kind", np.uint8),
        ("code", np.uint8),
        ("side", np.uint8),
    ],
    align=True,
)
"""One outbound event; ``msg_index`` is the position of the causing message in its stream."""

ORDER_ROW_DTYPE = np.dtype(
    [
        ("order_id", np.int64),
        ("price_ticks", np.int64),
        ("leaves_qty", np.int64),
        ("prev", np.int32),  # previous row in the level's FIFO, -1 at the head
        ("next", np.int32),  # next row in the level's FIFO, -1 at the tail
        ("symbol", np.int32),
        ("account", np.int32),
        ("level", np.int32),  # index into the symbol's ladder
        ("side", np.uint8),
        ("post_only", np.uint8),
        ("stp", np.uint8),
    ],
    align=True,
)
"""A resting order, stored in a preallocated row reused through the free list."""

LEVEL_DTYPE = np.dtype(
    [
        ("total_qty", np.int64),
        ("head", np.int32),
        ("tail", np.int32),
        ("count", np.int32),
    ],
    align=True,
)
"""One price level of one side of one symbol: a FIFO of order rows and its total quantity."""

SYMBOL_DTYPE = np.dtype(
    [
        ("base_tick", np.int64),  # price of ladder index 0
        ("reference_tick", np.int64),  # centre of the price band
        ("best_bid", np.int32),  # ladder index of the best bid, -1 when no bids
        ("best_ask", np.int32),  # ladder index of the best ask, -1 when no asks
        ("n_live", np.int32),  # resting orders on both sides
    ],
    align=True,
)
"""Per-symbol state: the ladder window, the band reference, the best prices."""

ACCOUNT_DTYPE = np.dtype(
    [
        ("position", np.int64),
        ("open_buy", np.int64),
        ("open_sell", np.int64),
        ("open_orders", np.int64),  # resting orders
    ],
    align=True,
)
"""Per (account, symbol) risk state, stored at index ``account * n_symbols + symbol``."""

# --- indices into the int64 counters and config arrays ---------------------------------------
C_SEQ = 0  # last sequence number handed out
C_FREE_TOP = 1  # number of free rows on the free-list stack
C_N_LIVE = 2  # resting orders over all symbols
N_COUNTERS = 3

K_WINDOW = 0  # ladder levels per side per symbol
K_MAX_QTY = 1
K_EXPOSURE = 2
K_BAND = 3
K_N_SYMBOLS = 4
K_N_ACCOUNTS = 5
K_MAX_ORDER_ID = 6
K_CAPACITY = 7
K_MAX_OPEN = 8
N_CONFIG = 9
