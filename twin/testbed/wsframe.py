"""The WebSocket framing the feed needs (RFC 6455): the opening handshake and text frames.

The feed server sends unmasked text frames (a server never masks, section 5.1); the client
parses them one at a time so it can timestamp each frame's decode (the stage the C++ engine
write-up times). Only what a market-data feed uses is here: FIN text frames with 7-, 16- or
64-bit lengths, and close frames. Anything else (a masked server frame, a reserved bit, a
fragment, a control frame above 125 bytes) is a :class:`FrameError`, which the client counts
and survives by resynchronising on the next read.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 section 1.3
OP_TEXT = 0x1
OP_CLOSE = 0x8
MAX_FRAME_BYTES = 1 << 20  # a market-data message is a few hundred bytes


class FrameError(ValueError):
    """Bytes that are not a frame this feed sends."""


def accept_key(key: str) -> str:
    """The ``Sec-WebSocket-Accept`` answer to a client's ``Sec-WebSocket-Key``."""
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


def client_request(host: str, path: str = "/feed") -> tuple[bytes, str]:
    """The client's upgrade request and the accept value the server must answer with."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    return request.encode(), accept_key(key)


def server_response(request: bytes) -> bytes:
    """The server's 101 answer to an upgrade request (FrameError if it is not one)."""
    headers = {}
    for line in request.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    key = headers.get("sec-websocket-key")
    if not key or headers.get("upgrade", "").lower() != "websocket":
        raise FrameError("not a WebSocket upgrade request")
    return (
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Accept: {accept_key(key)}\r\n\r\n"
    ).encode()


def text_frame(payload: bytes) -> bytes:
    """One unmasked FIN text frame carrying ``payload``."""
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", 0x80 | OP_TEXT, n)
    elif n < 1 << 16:
        header = struct.pack("!BBH", 0x80 | OP_TEXT, 126, n)
    else:
        header = struct.pack("!BBQ", 0x80 | OP_TEXT, 127, n)
    return header + payload


def next_frame(buffer: bytes | bytearray, start: int) -> tuple[int, bytes, int] | None:
    """The frame at ``buffer[start:]`` as ``(opcode, payload, next start)``, or None when the
    buffer holds only part of it. Raises FrameError on bytes this feed never sends."""
    if len(buffer) - start < 2:
        return None
    b0, b1 = buffer[start], buffer[start + 1]
    if b0 & 0x70 or not b0 & 0x80:
        raise FrameError(f"reserved bits or a fragment (first byte 0x{b0:02x})")
    if b1 & 0x80:
        raise FrameError("a masked frame from the server")
    n, at = b1 & 0x7F, start + 2
    if n == 126:
        if len(buffer) - at < 2:
            return None
        (n,) = struct.unpack_from("!H", buffer, at)
        at += 2
    elif n == 127:
        if len(buffer) - at < 8:
            return None
        (n,) = struct.unpack_from("!Q", buffer, at)
        at += 8
    if n > MAX_FRAME_BYTES:
        raise FrameError(f"a frame of {n} bytes (at most {MAX_FRAME_BYTES})")
    if len(buffer) - at < n:
        return None
    return b0 & 0x0F, bytes(buffer[at : at + n]), at + n
