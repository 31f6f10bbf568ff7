#pragma once
// The integer arithmetic of one exact NVFP4 dot, written once for the host and the device: the GPU
// exact-dot kernel (oracles/gpu/gpu_exact_dots.cu) calls it per (activation row, weight row), and the
// CPU unit test (tests/oracles/gpu_dot_math_test.cpp) checks the same code against exact_dot_rows
// where CI has no GPU. Compiled by nvcc for the device and by the host compiler everywhere.
//
// Operand layouts (all read as uploaded, no repacking):
// - activation rows: DecodedNvfp4's tables (oracles/exact_dot.h). Row r's codes start at
//   r * groups * 128 (int8, 2 x e2m1 value); block b's 8 even elements lie at (b/4)*64 + (b%4)*8 and
//   its 8 odd elements 32 bytes further; its scale (int32, e4m3 value x 2^9, NaN bytes 0) at
//   (b/8)*8 + kScalePosition[b%8] of the row's groups * 8 scales.
// - weight rows: Nvfp4Matrix's stored form, cols/2 packed bytes (byte j: element 2j in the low
//   nibble, 2j+1 in the high one) and cols/16 E4M3 bytes per row.
// So block b's dot is sum_j a_even[j] * w(lo nibble of byte 8b+j) + a_odd[j] * w(hi nibble).
//
// Exactness: |2 e2m1| <= 12, so a block sum |S_b| <= 16 * 144 = 2304 and its magnitude sum M_b fit
// int32; the scale product |n_a n_w| <= 229376^2 < 2^36, so one block term is below 2^48 and int64
// lanes take 2^14 of them (kFlushBlocks) before they are added to the __int128 totals.
//
// Example (host or device):
//   moefuzz::gpu::DotTotals t = moefuzz::gpu::exact_block_dots(a_codes, a_scales, w_packed, w_scales,
//   blocks);
//   // t.sum == exact_dot_rows(...).sum, t.abs_sum == ....abs_sum (NaN flags are set by the caller)
//   double v = moefuzz::gpu::dot_value(t.sum);          // == ExactDot::value()
//   double m = moefuzz::gpu::dot_abs_value(t.abs_sum);  // == ExactDot::abs_value()
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define MOEFUZZ_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define MOEFUZZ_HOST_DEVICE inline
#endif

namespace moefuzz::gpu {

// Block-term int64 lanes are flushed to __int128 every kFlushBlocks blocks: 2^14 terms below 2^48.
inline constexpr int64_t kFlushBlocks = int64_t{1} << 14;

// 2 x e2m1 value of a 4-bit code: an integer in [-12, 12].
MOEFUZZ_HOST_DEVICE int32_t twice_e2m1(uint32_t code) {
  // magnitudes 0, 1, 2, 3, 4, 6, 8, 12 for codes 0..7, bits 3 = sign; packed 8 bits each in two words
  const uint32_t lo = 0x03020100u, hi = 0x0C080604u;
  const uint32_t m = code & 7u;
  const int32_t mag = static_cast<int32_t>(((m < 4 ? lo : hi) >> (8 * (m & 3))) & 0xFFu);
  return (code & 8u) != 0 ? -mag : mag;
}

// E4M3 byte -> value x 2^9 as an exact integer (e == 0: m; else (8 + m) << (e - 1); sign bit), and
// whether the byte is NaN (0x7F / 0xFF: value 0, as DecodedNvfp4 stores it).
MOEFUZZ_HOST_DEVICE int32_t e4m3_times_512(uint32_t byte, bool& nan) {
  const uint32_t e = (byte >> 3) & 15u, m = byte & 7u;
  nan = (byte & 0x7Fu) == 0x7Fu;
  if (nan) return 0;
  const int32_t mag = e == 0 ? static_cast<int32_t>(m) : static_cast<int32_t>((8u + m) << (e - 1));
  return (byte & 0x80u) != 0 ? -mag : mag;
}

// Position of block b's scale inside its group of 8 in DecodedNvfp4's scale table (self-inverse
// permutation of the AVX2 reduction order; exact_dot.cpp kPositionOfBlock).
MOEFUZZ_HOST_DEVICE int64_t scale_position(int64_t b) {
  const int p = static_cast<int>(b & 7);
  const int perm = (p == 2 || p == 3) ? p + 2 : (p == 4 || p == 5) ? p - 2 : p;
  return (b & ~int64_t{7}) + perm;
}

// Four signed int8 lanes packed little-endian from four values in [-128, 127].
MOEFUZZ_HOST_DEVICE int32_t pack_int8x4(int32_t a, int32_t b, int32_t c, int32_t d) {
  return static_cast<int32_t>((static_cast<uint32_t>(a) & 0xFFu) | ((static_cast<uint32_t>(b) & 0xFFu) << 8) |
                              ((static_cast<uint32_t>(c) & 0xFFu) << 16) |
                              ((static_cast<uint32_t>(d) & 0xFFu) << 24));
}

// sum_i int8 lanes of x * int8 lanes of y + acc: the device's dp4a, the same integer on the host.
MOEFUZZ_HOST_DEVICE int32_t dot4(int32_t x, int32_t y, int32_t acc) {
#if defined(__CUDA_ARCH__)
  return __dp4a(x, y, acc);
#else
  for (int k = 0; k < 4; ++k)
    acc += static_cast<int32_t>(static_cast<int8_t>(static_cast<uint32_t>(x) >> (8 * k))) *
           static_cast<int32_t>(static_cast<int8_t>(static_cast<uint32_t>(y) >> (8 * k)));
  return acc;
#endif
}

// |x| per int8 lane (lanes are in [-12, 12]: no -128).
MOEFUZZ_HOST_DEVICE int32_t abs_int8x4(int32_t x) {
  int32_t out = 0;
  for (int k = 0; k < 4; ++k) {
    const int32_t v = static_cast<int8_t>(static_cast<uint32_t>(x) >> (8 * k));
    out |= static_cast<int32_t>((static_cast<uint32_t>(v < 0 ? -v : v) & 0xFFu) << (8 * k));
  }
  return out;
}

// Little-endian 32-bit word of 4 bytes (alignment-free on both sides).
MOEFUZZ_HOST_DEVICE uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

struct BlockSums {
  int32_t sum = 0;  // S_b = sum_i (2 a_i)(2 w_i)
  int32_t abs = 0;  // M_b = sum_i |(2 a_i)(2 w_i)|
};

// One 16-element block: a_even/a_odd the activation's 8 even / 8 odd codes (int8), w the weight's 8
// packed bytes.
MOEFUZZ_HOST_DEVICE BlockSums block_sums(const int8_t* a_even, const int8_t* a_odd, const uint8_t* w) {
  BlockSums s;
  for (int h = 0; h < 2; ++h) {
    const uint32_t bytes = load_u32(w + 4 * h);
    const int32_t w_lo = pack_int8x4(twice_e2m1(bytes), twice_e2m1(bytes >> 8), twice_e2m1(bytes >> 16),
                                     twice_e2m1(bytes >> 24));
    const int32_t w_hi = pack_int8x4(twice_e2m1(bytes >> 4), twice_e2m1(bytes >> 12), twice_e2m1(bytes >> 20),
                                     twice_e2m1(bytes >> 28));
    const int32_t ae = static_cast<int32_t>(load_u32(reinterpret_cast<const uint8_t*>(a_even + 4 * h)));
    const int32_t ao = static_cast<int32_t>(load_u32(reinterpret_cast<const uint8_t*>(a_odd + 4 * h)));
    s.sum = dot4(ae, w_lo, dot4(ao, w_hi, s.sum));
    s.abs = dot4(abs_int8x4(ae), abs_int8x4(w_lo), dot4(abs_int8x4(ao), abs_int8x4(w_hi), s.abs));
  }
  return s;
}

struct DotTotals {
  __int128 sum = 0;      // sum_b S_b n_a n_w: the exact dot x 2^20
  __int128 abs_sum = 0;  // sum_b M_b |n_a n_w|
  bool weight_nan = false;
};

// The exact dot of one activation row (its code and scale rows in DecodedNvfp4's layout) with one
// packed weight row over the blocks first, first + stride, ... below `blocks` (first = 0, stride = 1:
// the whole dot; the device splits a dot over the 32 lanes of a warp and adds the lanes' totals,
// which is exact in any order). NaN scale bytes count as 0 (as on the CPU) and set weight_nan; the
// activation row's NaN flag is the caller's.
MOEFUZZ_HOST_DEVICE DotTotals exact_block_dots(const int8_t* a_codes, const int32_t* a_scales,
                                               const uint8_t* w_packed, const uint8_t* w_scales,
                                               int64_t blocks, int64_t first = 0, int64_t stride = 1) {
  DotTotals t;
  int64_t lane = 0, lane_abs = 0, terms = 0;
  for (int64_t b = first; b < blocks; b += stride) {
    const int8_t* chunk = a_codes + (b >> 2) * 64 + (b & 3) * 8;
    const BlockSums s = block_sums(chunk, chunk + 32, w_packed + 8 * b);
    bool nan = false;
    const int64_t scale =
        static_cast<int64_t>(a_scales[scale_position(b)]) * e4m3_times_512(w_scales[b], nan);
    t.weight_nan = t.weight_nan || nan;
    lane += scale * s.sum;
    lane_abs += (scale < 0 ? -scale : scale) * s.abs;
    if (++terms == kFlushBlocks) {
      t.sum += lane;
      t.abs_sum += lane_abs;
      lane = lane_abs = terms = 0;
    }
  }
  t.sum += lane;
  t.abs_sum += lane_abs;
  return t;
}

// Index of the highest set bit of a nonzero 64-bit word.
MOEFUZZ_HOST_DEVICE int highest_bit(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return 63 - __clzll(static_cast<long long>(x));
#else
  return 63 - __builtin_clzll(x);
#endif
}

// 2^e for 0 <= e <= 1023, built from its bits.
MOEFUZZ_HOST_DEVICE double power_of_two(int e) {
  const uint64_t bits = static_cast<uint64_t>(e + 1023) << 52;
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

// A nonnegative 128-bit integer as a double: rounded to nearest (ties to even), or up (the least double
// not below it). Integer steps and one exact multiply, so host and device give the same bits; the CPU
// oracle's conversions (the compiler's __int128 -> double, exact_dot.cpp's int128_to_double_up) are the
// reference tests/oracles/gpu_dot_math_test.cpp holds these to.
MOEFUZZ_HOST_DEVICE double magnitude_to_double(unsigned __int128 m, bool round_up) {
  const uint64_t high = static_cast<uint64_t>(m >> 64), low = static_cast<uint64_t>(m);
  if (high == 0 && low < (uint64_t{1} << 53)) return static_cast<double>(low);  // exact
  const int bits = high != 0 ? 65 + highest_bit(high) : 1 + highest_bit(low);
  const int shift = bits - 53;  // 1 .. 75
  uint64_t mantissa = static_cast<uint64_t>(m >> shift);
  const unsigned __int128 rest = m - (static_cast<unsigned __int128>(mantissa) << shift);
  const unsigned __int128 half = static_cast<unsigned __int128>(1) << (shift - 1);
  const bool bump = round_up ? rest != 0 : (rest > half || (rest == half && (mantissa & 1) != 0));
  mantissa += bump ? 1 : 0;  // 2^53 at most: still exact in a double
  return static_cast<double>(mantissa) * power_of_two(shift);
}

// ExactDot::value(): the exact dot x 2^20 rounded once to nearest, times 2^-20 (exact: a nonzero
// integer times 2^-20 is a normal double).
MOEFUZZ_HOST_DEVICE double dot_value(__int128 sum) {
  const bool negative = sum < 0;
  const unsigned __int128 m = negative
                                  ? static_cast<unsigned __int128>(0) - static_cast<unsigned __int128>(sum)
                                  : static_cast<unsigned __int128>(sum);
  const double d = magnitude_to_double(m, false) * 0x1p-20;
  return negative ? -d : d;
}

// ExactDot::abs_value(): the magnitude sum (nonnegative) rounded up, times 2^-20.
MOEFUZZ_HOST_DEVICE double dot_abs_value(__int128 abs_sum) {
  return magnitude_to_double(static_cast<unsigned __int128>(abs_sum), true) * 0x1p-20;
}

}  // namespace moefuzz::gpu
