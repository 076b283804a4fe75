"""One compressed HdrHistogram (an interval log line's payload), decoded to its non-zero buckets.

The wire form (HdrHistogram's V2 encoding, what the Java ``HistogramLogWriter`` and the ``hdrh``
package write): base64 of an 8-byte header (cookie, length) and a zlib stream that inflates to
a 40-byte payload header (cookie, varint length, normalizing offset, significant figures,
lowest and highest trackable value, conversion ratio) and the counts as zig-zag LEB128 varints,
a negative one being a run of empty buckets.

``hdrh`` decodes a payload into a dense array of every counter its header asks for: 6,160,384
counters (49 MB) for a 5-significant-figure histogram up to ``Long.MAX_VALUE``, however few
buckets hold values. Here the varints are decoded with numpy straight to (bucket, count)
pairs, so what a payload costs is what it inflates to, not what its header asks for: the
bounds are bytes (:data:`MAX_INFLATED_BYTES` per histogram, enough for every counter of the
largest legal one to be non-zero; the caller bounds the file's total), never the settings.
Bucket values follow HdrHistogram's layout (``AbstractHistogram.valueFromIndex``), the same
``hdrh`` computes (tests compare both on real payloads at 1 to 5 significant figures).
"""

from __future__ import annotations

import base64
import binascii
import zlib
from dataclasses import dataclass

import numpy as np
from hdrh.codec import ExternalHeader, PayloadHeader, ext_header_size, payload_header_size

#: What one histogram may inflate to: the largest legal one (6,160,384 counters, each a varint
#: of at most 9 bytes) fits, a zip bomb does not.
MAX_INFLATED_BYTES = 64 * 1024 * 1024
#: The most recorded values one file may add up to (exact in a float; 104 days at 1e9/s).
MAX_TOTAL_COUNT = 2**53
UNDECODABLE = "cannot decode the compressed histogram"
CORRUPT = "the log is truncated or corrupt"
_COMPRESSION_COOKIE = 0x1C849304
_ENCODING_COOKIE = 0x1C849303


class PayloadError(ValueError):
    """A payload that cannot be decoded; the message says why (the reader adds file:line)."""


@dataclass(frozen=True)
class Buckets:
    """The non-zero buckets of one histogram: each bucket's lowest and highest equivalent value
    and its count (int64 arrays in increasing value order), and the settings it was read with."""

    low: np.ndarray
    high: np.ndarray
    count: np.ndarray
    significant_figures: int
    lowest_trackable: int
    highest_trackable: int
    inflated_bytes: int

    @property
    def max_value(self) -> int:
        """The histogram's max as ``hdrh`` reports it (its top bucket's highest value)."""
        return int(self.high[-1]) if len(self.high) else 0


@dataclass(frozen=True)
class _Layout:
    unit_magnitude: int
    half_magnitude: int
    counters: int


def layout(significant_figures: int, lowest: int, highest: int) -> _Layout:
    """HdrHistogram's bucket layout for these settings (``hdrh.HdrHistogram.__init__``)."""
    unit_magnitude = lowest.bit_length() - 1
    count_magnitude = (2 * 10**significant_figures - 1).bit_length()  # ceil(log2(2 * 10^sig))
    half_magnitude = max(count_magnitude - 1, 0)
    sub_buckets = 1 << (half_magnitude + 1)
    buckets, untrackable = 1, sub_buckets << unit_magnitude
    while untrackable <= highest:
        untrackable <<= 1
        buckets += 1
    return _Layout(unit_magnitude, half_magnitude, (buckets + 1) * (sub_buckets // 2))


def decode(payload: str) -> Buckets:
    """Decode one base64 payload; raise :class:`PayloadError` naming what is wrong."""
    try:
        raw = base64.b64decode(payload.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise PayloadError(f"{UNDECODABLE}: not base64; {CORRUPT}") from None
    if len(raw) < ext_header_size:
        raise PayloadError(f"{UNDECODABLE}: {len(raw)} bytes, shorter than its header; {CORRUPT}")
    outer = ExternalHeader.from_buffer_copy(raw)
    if outer.cookie & ~0xF0 != _COMPRESSION_COOKIE:
        raise PayloadError(
            f"{UNDECODABLE}: not a compressed HdrHistogram (cookie {outer.cookie:#x}); {CORRUPT}"
        )
    if outer.length != len(raw) - ext_header_size:
        raise PayloadError(
            f"{UNDECODABLE}: it states {outer.length:,} compressed bytes and holds "
            f"{len(raw) - ext_header_size:,}; {CORRUPT}"
        )
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(raw[ext_header_size:], MAX_INFLATED_BYTES)
    except zlib.error as exc:
        raise PayloadError(f"{UNDECODABLE} (zlib: {exc}); {CORRUPT}") from None
    if inflater.unconsumed_tail:
        raise PayloadError(f"{UNDECODABLE}: it inflates beyond {MAX_INFLATED_BYTES:,} bytes")
    if len(data) < payload_header_size:
        raise PayloadError(
            f"{UNDECODABLE}: it inflates to {len(data)} bytes, shorter than its header; {CORRUPT}"
        )
    header = PayloadHeader.from_buffer_copy(data)
    sig, lowest, highest = (
        int(header.significant_figures),
        int(header.lowest_trackable_value),
        int(header.highest_trackable_value),
    )
    if header.cookie & ~0xF0 != _ENCODING_COOKIE:
        raise PayloadError(
            f"{UNDECODABLE}: not an HdrHistogram payload (cookie {header.cookie:#x}); {CORRUPT}"
        )
    if not (0 <= sig <= 5 and 1 <= lowest and 2 * lowest <= highest < 2**63):
        raise PayloadError(
            f"{UNDECODABLE}: settings out of range (significant figures {sig}, lowest {lowest}, "
            f"highest {highest})"
        )
    end = payload_header_size + int(header.payload_len)
    if end > len(data):
        raise PayloadError(
            f"{UNDECODABLE}: it states {header.payload_len:,} bytes of counts and holds "
            f"{len(data) - payload_header_size:,}; {CORRUPT}"
        )
    shape = layout(sig, lowest, highest)
    index, count = _counts(
        np.frombuffer(
            data, dtype=np.uint8, count=end - payload_header_size, offset=payload_header_size
        ),
        shape.counters,
    )
    low, high = _values(index, shape)
    return Buckets(low, high, count, sig, lowest, highest, len(data))


_CHUNK_BYTES = 1 << 20  # varints decoded at a time: numpy's temporaries stay a few MB


def _counts(varints: np.ndarray, counters: int) -> tuple[np.ndarray, np.ndarray]:
    """The (bucket index, count) of every non-zero count in a zig-zag LEB128 stream."""
    indices, counts = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    if len(varints) and varints[-1] & 0x80:
        raise PayloadError(f"{UNDECODABLE}: its counts stop inside a number; {CORRUPT}")
    begin, next_index = 0, 0
    while begin < len(varints):
        stop = min(begin + _CHUNK_BYTES, len(varints))
        chunk = varints[begin:stop]
        ends = np.flatnonzero((chunk & 0x80) == 0)
        if len(ends) == 0:
            raise PayloadError(f"{UNDECODABLE}: a count or empty run beyond 2**62; {CORRUPT}")
        chunk = chunk[: ends[-1] + 1]
        begin += len(chunk)
        starts = np.concatenate(([0], ends[:-1] + 1))
        if int((ends - starts).max()) > 8:
            raise PayloadError(f"{UNDECODABLE}: a count or empty run beyond 2**62; {CORRUPT}")
        position = np.arange(len(chunk)) - np.repeat(starts, ends - starts + 1)
        shifted = (chunk & 0x7F).astype(np.uint64) << (7 * position).astype(np.uint64)
        zigzag = np.add.reduceat(shifted, starts)
        value = (zigzag >> np.uint64(1)).astype(np.int64) ^ -(zigzag & np.uint64(1)).astype(
            np.int64
        )
        step = np.where(value < 0, -value, 1)
        if next_index + float(step.astype(np.float64).sum()) > counters:
            raise PayloadError(
                f"{UNDECODABLE}: its counts run past the {counters:,} buckets its settings "
                f"have; {CORRUPT}"
            )
        index = next_index + np.cumsum(step) - step
        next_index = int(index[-1] + step[-1])
        filled = value > 0
        indices.append(index[filled])
        counts.append(value[filled])
    return np.concatenate(indices), np.concatenate(counts)


def _values(index: np.ndarray, shape: _Layout) -> tuple[np.ndarray, np.ndarray]:
    """Each bucket index's lowest and highest equivalent value (``valueFromIndex``)."""
    half = np.int64(1) << shape.half_magnitude
    bucket = (index >> shape.half_magnitude) - 1
    sub_bucket = (index & (half - 1)) + half
    first = bucket < 0
    sub_bucket = np.where(first, sub_bucket - half, sub_bucket)
    bucket = np.where(first, 0, bucket)
    low = sub_bucket << (bucket + shape.unit_magnitude)
    return low, low + (np.int64(1) << (bucket + shape.unit_magnitude)) - 1
