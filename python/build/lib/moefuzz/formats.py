"""Number formats of NVFP4 MoE layers, in numpy: bf16, FP8-E4M3 and FP4-E2M1 (SPEC.md section 1).

These are decoding and rounding helpers for kernels written in numpy (and for tests); torch kernels use
torch.bfloat16 and torch.float8_e4m3fn directly.

Example:
    import numpy as np
    from moefuzz import formats
    y = formats.round_to_bf16(np.float32([1.00390625]))   # -> 1.0 (ties to even)
    v = formats.e2m1_value(np.uint8([0x7, 0xF]))            # -> [6.0, -6.0]
"""
from __future__ import annotations

import numpy as np

# E2M1 code -> value (codes 8..15 are the negatives; 0x8 is -0).
E2M1_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0],
                       dtype=np.float32)


def _e4m3_table() -> np.ndarray:
    out = np.zeros(256, dtype=np.float32)
    for b in range(256):
        sign = -1.0 if b & 0x80 else 1.0
        exp = (b >> 3) & 0xF
        man = b & 0x7
        if exp == 0xF and man == 0x7:
            out[b] = np.nan
        elif exp == 0:
            out[b] = sign * (man / 8.0) * 2.0 ** -6
        else:
            out[b] = sign * (1.0 + man / 8.0) * 2.0 ** (exp - 7)
    return out


E4M3_VALUES = _e4m3_table()


def e2m1_value(codes: np.ndarray) -> np.ndarray:
    """Values of 4-bit codes (one code per element, 0..15)."""
    return E2M1_VALUES[np.asarray(codes, dtype=np.uint8) & 0xF]


def unpack_fp4(packed: np.ndarray) -> np.ndarray:
    """[..., K/2] bytes -> [..., K] codes; the low nibble is the even column."""
    packed = np.asarray(packed, dtype=np.uint8)
    out = np.empty(packed.shape[:-1] + (packed.shape[-1] * 2,), dtype=np.uint8)
    out[..., 0::2] = packed & 0xF
    out[..., 1::2] = packed >> 4
    return out


def pack_fp4(codes: np.ndarray) -> np.ndarray:
    """[..., K] codes -> [..., K/2] bytes, low nibble = even column."""
    codes = np.asarray(codes, dtype=np.uint8)
    return (codes[..., 0::2] & 0xF) | ((codes[..., 1::2] & 0xF) << 4)


def e4m3_value(bits: np.ndarray) -> np.ndarray:
    """Values of FP8-E4M3 bytes (0x7F / 0xFF are NaN)."""
    return E4M3_VALUES[np.asarray(bits, dtype=np.uint8)]


def bf16_bits_to_float(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def float_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """fp32 -> bf16 bits, round to nearest even; NaN stays a quiet NaN."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


def round_to_bf16(x: np.ndarray) -> np.ndarray:
    """fp32 values rounded to the nearest bf16 value (ties to even), returned as fp32."""
    return bf16_bits_to_float(float_to_bf16_bits(x))
