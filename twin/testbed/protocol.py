"""The testbed's wire protocol: fixed-size 120-byte binary messages over TCP, little-endian.

Every message, in both directions, is one :data:`WIRE_DTYPE` record of exactly
:data:`FRAME_BYTES` (120, the domain brief's average payload), so framing is a division::

    offset size type  field          meaning
    ------ ---- ----- -------------- ---------------------------------------------------------
      0     2   u16   magic          0x5854 ("TX" little-endian); anything else: framing lost
      2     1   u8    version        1
      3     1   u8    msg_type       1 new order, 2 cancel (client -> gateway);
                                     3 ack, 4 cancel ack, 5 reject (gateway -> client)
      4     2   u16   length         120; any other value is refused (no variable frames)
      6     2   u16   reserved       requests: 0; replies: frames in the gateway's read that
                                     carried the request (its batch: per-read cost is shared)
      8     8   u64   seq            per connection and direction: 1, 2, 3, ... (gaps rejected)
     16     8   i64   client_ts_ns   opaque to the gateway, echoed in the reply (the load client
                                     puts the message's scheduled send time here)
     24     8   i64   order_id       client order id, in [0, ORDER_IDS_PER_CONNECTION): unique
                                     among the connection's live orders, reusable once done
     32     8   i64   price_ticks    limit price (new orders)
     40     8   i64   qty_lots       quantity (new orders); echoed in replies
     48     8   i64   leaves_qty     replies: quantity left resting (engine_ext EV_ACK)
     56     8   i64   exchange_seq   replies: the matching engine's event sequence number
     64     8   i64   gateway_ns     replies: gateway processing time per message of the read
                                     that carried the request (decode + risk + match + encode)
     72     4   i32   symbol         instrument (engine_ext symbol index)
     76     4   i32   account        trading account (engine_ext account index, risk limits)
     80     1   u8    side           0 buy, 1 sell
     81     1   u8    order_type     engine_ext OT_* (0 GTC limit, 1 IOC, 2 FOK, 3 market, 4 post)
     82     1   u8    stp            engine_ext STP_* self-trade prevention mode
     83     1   u8    code           ack: engine_ext OUT_* outcome; reject: reason (below)
     84     4   --    (padding)
     88     8   u64   ref_seq        replies: ``seq`` of the request answered
     96     1   u8    gateway_cpu    replies: the CPU the gateway's read ran on; requests: 0
     97     3   --    reserved       zero
    100     4   u32   read_cpu_ns    replies: gateway thread CPU (ns) a message of the request's
                                     read, counted from the end of its previous read (saturating)
    104     8   i64   read_ns        replies: the gateway's clock (CLOCK_MONOTONIC ns, the load
                                     client's too) when it began handling the request's read;
                                     requests: 0
    112     8   --    reserved       zero

Reject reasons are engine_ext's ``REJ_*`` codes (1..18) and the gateway's ``REJ_BAD_MAGIC`` ..
``REJ_SEQUENCE_GAP`` (100..). A bad magic, version or length means the stream can no longer be
framed: one reject, and **that** connection is closed. An unknown message type or a sequence
gap gets a reject and the connection goes on (resynchronised on the received ``seq``).
"""

from __future__ import annotations

import numpy as np

MAGIC = 0x5854
VERSION = 1
FRAME_BYTES = 120

MSG_NEW = 1
MSG_CANCEL = 2
MSG_ACK = 3
MSG_CANCEL_ACK = 4
MSG_REJECT = 5

# Gateway protocol reject reasons (engine_ext's REJ_* risk codes stay below 100).
REJ_BAD_MAGIC = 100  # magic or version wrong: the stream cannot be framed; connection closed
REJ_BAD_LENGTH = 101  # length field is not FRAME_BYTES; connection closed
REJ_UNKNOWN_TYPE = 102  # msg_type is not new or cancel; connection continues
REJ_SEQUENCE_GAP = 103  # seq is not the previous + 1; connection continues from this seq
REJ_BAD_ORDER_ID = 104  # client order id outside [0, ORDER_IDS_PER_CONNECTION)

# Client order ids index a per-connection block of the engine's dense order-id table, which is
# what keeps two connections' ids apart (and lets one connection cancel only its own orders).
ORDER_IDS_PER_CONNECTION = 4096

WIRE_DTYPE = np.dtype(
    {
        "names": [
            "magic",
            "version",
            "msg_type",
            "length",
            "reserved",
            "seq",
            "client_ts_ns",
            "order_id",
            "price_ticks",
            "qty_lots",
            "leaves_qty",
            "exchange_seq",
            "gateway_ns",
            "symbol",
            "account",
            "side",
            "order_type",
            "stp",
            "code",
            "ref_seq",
            "gateway_cpu",
            "read_cpu_ns",
            "read_ns",
        ],
        "formats": [
            "<u2",
            "u1",
            "u1",
            "<u2",
            "<u2",
            "<u8",
            "<i8",
            "<i8",
            "<i8",
            "<i8",
            "<i8",
            "<i8",
            "<i8",
            "<i4",
            "<i4",
            "u1",
            "u1",
            "u1",
            "u1",
            "<u8",
            "u1",
            "<u4",
            "<i8",
        ],
        "offsets": [
            0,
            2,
            3,
            4,
            6,
            8,
            16,
            24,
            32,
            40,
            48,
            56,
            64,
            72,
            76,
            80,
            81,
            82,
            83,
            88,
            96,
            100,
            104,
        ],
        "itemsize": FRAME_BYTES,
    }
)
"""One message on the wire (see the module docstring for the table)."""


def new_frames(n: int) -> np.ndarray:
    """``n`` zeroed frames with magic, version and length filled in."""
    frames = np.zeros(n, dtype=WIRE_DTYPE)
    frames["magic"] = MAGIC
    frames["version"] = VERSION
    frames["length"] = FRAME_BYTES
    return frames


def encode(frames: np.ndarray) -> bytes:
    """The bytes of some frames, ready to send."""
    return frames.tobytes()


def decode(data: bytes) -> np.ndarray:
    """Whole frames from ``data`` (a read-only view; trailing partial bytes are ignored)."""
    return np.frombuffer(data, dtype=WIRE_DTYPE, count=len(data) // FRAME_BYTES)
