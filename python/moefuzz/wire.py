"""Framed messages between moefuzz (C++) and its Python kernel worker.

Both directions: u32 magic 'MFZ1' | u32 header bytes | u64 payload bytes | header (JSON) | payload.
The header's "tensors" list names each tensor's dtype, shape and byte range in the payload
(kernels/python_worker.h is the C++ side).
"""
from __future__ import annotations

import json
import socket
import struct

import numpy as np

MAGIC = 0x315A464D  # "MFZ1" little-endian
_HEAD = struct.Struct("<IIQ")

# Wire dtypes -> numpy storage dtypes. bf16 travels as its 16-bit pattern, E4M3 as its byte.
NUMPY_DTYPE = {
    "f32": np.float32,
    "bf16": np.uint16,
    "u16": np.uint16,
    "u8": np.uint8,
    "e4m3": np.uint8,
    "i32": np.int32,
    "i64": np.int64,
}


class ChannelClosed(Exception):
    """moefuzz closed its end: the worker exits quietly."""


def _recv_exact(sock: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ChannelClosed()
        got += k
    return buf


def recv(sock: socket.socket):
    """One message: (header dict, {name: numpy array}). Arrays are views of one received buffer."""
    magic, hbytes, pbytes = _HEAD.unpack(_recv_exact(sock, _HEAD.size))
    if magic != MAGIC:
        raise ChannelClosed()
    header = json.loads(_recv_exact(sock, hbytes).decode("utf-8")) if hbytes else {}
    payload = _recv_exact(sock, pbytes) if pbytes else bytearray()
    tensors = {}
    for t in header.get("tensors", []):
        dtype = NUMPY_DTYPE[t["dtype"]]
        count = t["bytes"] // np.dtype(dtype).itemsize
        arr = np.frombuffer(payload, dtype=dtype, count=count, offset=t["offset"]).reshape(t["shape"])
        tensors[t["name"]] = (t["dtype"], arr)
    return header, tensors


def send(sock: socket.socket, header: dict, tensors=()) -> None:
    """Sends header plus tensors [(name, wire dtype, contiguous numpy array)]."""
    listed = []
    chunks = []
    offset = 0
    for name, dtype, arr in tensors:
        arr = np.ascontiguousarray(arr)
        data = arr.tobytes()
        listed.append({"name": name, "dtype": dtype, "shape": list(arr.shape), "offset": offset, "bytes": len(data)})
        chunks.append(data)
        offset += len(data)
    if listed:
        header = dict(header, tensors=listed)
    text = json.dumps(header).encode("utf-8")
    # One send per message: every extra send is a wake-up of the reader (measured: most of the bridge's time
    # at small shapes went to per-chunk sends).
    sock.sendall(b"".join([_HEAD.pack(MAGIC, len(text), offset), text] + chunks))
