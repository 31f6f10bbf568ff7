#include "core/nvfp4.h"

#include <immintrin.h>

#include <string>

#include "core/cpu_features.h"
#include "core/errors.h"

namespace moefuzz {
namespace {

// 2^40 elements = 512 GiB of packed codes: far beyond any real layer, small enough that rows * cols
// cannot overflow int64 and a hostile shape fails here with a message instead of in the allocator.
constexpr int64_t kMaxElements = int64_t{1} << 40;

}  // namespace

float nvfp4_dequant_value(uint8_t code, uint8_t scale, float global_dequant, Nvfp4DequantOrder order) {
  const float element = e2m1_to_float(code);
  const float block_scale = e4m3_to_float(scale);
  if (order == Nvfp4DequantOrder::kCodeTimesScaleFirst) {
    const float exact_product = element * block_scale;
    return exact_product * global_dequant;
  }
  const float scale_float = block_scale * global_dequant;
  return element * scale_float;
}

Nvfp4Matrix::Nvfp4Matrix(int64_t r, int64_t c) : rows(r), cols(c) {
  if (r < 0 || c < 0 || c % kNvfp4BlockSize != 0) {
    throw InputError(
        "NVFP4 matrix shape [" + std::to_string(r) + ", " + std::to_string(c) +
        "]: need rows >= 0 and K a non-negative multiple of 16 (one E4M3 scale per 16 elements)");
  }
  if (c > 0 && r > kMaxElements / c) {
    throw InputError("NVFP4 matrix shape [" + std::to_string(r) + ", " + std::to_string(c) +
                     "]: more than 2^40 elements");
  }
  packed.assign(static_cast<size_t>(r * c / 2), 0);
  scales.assign(static_cast<size_t>(r * c / kNvfp4BlockSize), 0);
}

float Nvfp4Matrix::dequant(int64_t r, int64_t c) const {
  return nvfp4_dequant_value(code(r, c), scale(r, c / kNvfp4BlockSize), global_dequant);
}

namespace {

// nvfp4_dequant_value's default order, element * fl(block scale * S_d), for each block of a row.
void dequant_row_scalar(const uint8_t* packed, const uint8_t* scales, float global_dequant, int64_t blocks,
                        float* out) {
  for (int64_t b = 0; b < blocks; ++b) {
    const float factor = e4m3_to_float(scales[b]) * global_dequant;
    const uint8_t* in = packed + b * kNvfp4BlockSize / 2;
    float* o = out + b * kNvfp4BlockSize;
    for (int64_t j = 0; j < kNvfp4BlockSize / 2; ++j) {  // low nibble first
      o[2 * j] = e2m1_to_float(in[j] & 0xF) * factor;
      o[2 * j + 1] = e2m1_to_float(in[j] >> 4) * factor;
    }
  }
}

// The same, eight elements at a time (AVX2): kE2m1Values looked up by two in-register permutes (its
// halves, picked by the sign bit), then the same fp32 multiply, so the same bits.
__attribute__((target("avx2"))) void dequant_row_avx2(const uint8_t* packed, const uint8_t* scales,
                                                      float global_dequant, int64_t blocks, float* out) {
  const __m256 positive = _mm256_loadu_ps(kE2m1Values.data()),
               negative = _mm256_loadu_ps(kE2m1Values.data() + 8);
  // Byte k of a block feeds elements 2k (low nibble) and 2k + 1 (high nibble).
  const __m128i twice = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m256i nibble_shift = _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4), low4 = _mm256_set1_epi32(0xF);
  for (int64_t b = 0; b < blocks; ++b) {
    const __m256 factor = _mm256_set1_ps(e4m3_to_float(scales[b]) * global_dequant);
    const __m128i bytes = _mm_shuffle_epi8(
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed + b * kNvfp4BlockSize / 2)), twice);
    for (int half = 0; half < 2; ++half) {
      const __m256i wide = _mm256_cvtepu8_epi32(half == 0 ? bytes : _mm_srli_si128(bytes, 8));
      const __m256i code = _mm256_and_si256(_mm256_srlv_epi32(wide, nibble_shift), low4);
      const __m256 sign = _mm256_castsi256_ps(_mm256_slli_epi32(code, 28));  // bit 3 -> the sign bit
      const __m256 value = _mm256_blendv_ps(_mm256_permutevar8x32_ps(positive, code),
                                            _mm256_permutevar8x32_ps(negative, code), sign);
      _mm256_storeu_ps(out + b * kNvfp4BlockSize + 8 * half, _mm256_mul_ps(value, factor));
    }
  }
}

}  // namespace

void Nvfp4Matrix::dequant_row(int64_t r, float* out) const {
  const int64_t blocks = cols / kNvfp4BlockSize;
  const uint8_t* p = packed.data() + r * cols / 2;
  const uint8_t* s = scales.data() + r * blocks;
  if (cpu_has_avx2())
    dequant_row_avx2(p, s, global_dequant, blocks, out);
  else
    dequant_row_scalar(p, s, global_dequant, blocks, out);
}

}  // namespace moefuzz
