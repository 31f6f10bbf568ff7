#include "core/case_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <span>

#include "core/bf16.h"
#include "core/e2m1.h"
#include "core/e4m3.h"

namespace moefuzz {
namespace {

struct RealStats {
  int64_t count = 0, zeros = 0, nans = 0, infs = 0;
  double min = std::numeric_limits<double>::infinity(), max = -std::numeric_limits<double>::infinity();
  double sum = 0, absmax = 0;  // over finite values

  void add(double v) {
    ++count;
    if (std::isnan(v)) {
      ++nans;
      return;
    }
    if (std::isinf(v)) {
      ++infs;
      return;
    }
    if (v == 0) ++zeros;
    min = std::min(min, v);
    max = std::max(max, v);
    absmax = std::max(absmax, std::fabs(v));
    sum += v;
  }
  std::string text() const {
    const int64_t finite = count - nans - infs;
    if (finite == 0) return fmt::format("no finite values  nan {} inf {}", nans, infs);
    return fmt::format("min {:.4g} max {:.4g} mean {:.4g} absmax {:.4g} zeros {} nan {} inf {}", min, max,
                       sum / static_cast<double>(finite), absmax, zeros, nans, infs);
  }
};

std::string dims(std::initializer_list<int64_t> d) { return fmt::format("[{}]", fmt::join(d, ", ")); }

template <class T, class Widen>
std::string real_line(const char* name, const char* dtype, const std::string& shape, const std::vector<T>& v,
                      Widen widen) {
  if (v.empty()) return fmt::format("{:<11}{:<6}(absent)\n", name, dtype);
  RealStats s;
  for (const T& x : v) s.add(widen(x));
  return fmt::format("{:<11}{:<6}{}  {}\n", name, dtype, shape, s.text());
}

std::string nvfp4_line(const char* name, const SharedVector<ExpertWeights>& experts,
                       const Nvfp4Matrix ExpertWeights::*which) {
  if (experts.empty()) return fmt::format("{:<11}nvfp4 (absent)\n", name);
  std::array<int64_t, 8> magnitude{};
  int64_t negative_zero = 0, zero_blocks = 0, subnormal_scales = 0, zero_scales = 0, nan_scales = 0,
          codes = 0;
  int min_scale = 0xFF, max_scale = -1;
  double sd_min = std::numeric_limits<double>::infinity(), sd_max = -sd_min;
  double eff_min = std::numeric_limits<double>::infinity(), eff_max = 0;
  for (const ExpertWeights& w : experts) {
    const Nvfp4Matrix& m = w.*which;
    sd_min = std::min<double>(sd_min, m.global_dequant);
    sd_max = std::max<double>(sd_max, m.global_dequant);
    for (uint8_t byte : m.packed) {
      for (uint8_t code : {static_cast<uint8_t>(byte & 0xF), static_cast<uint8_t>(byte >> 4)}) {
        ++magnitude[code & 7];
        negative_zero += code == 0x8;
      }
    }
    codes += static_cast<int64_t>(m.packed.size()) * 2;
    const int64_t bytes_per_block = kNvfp4BlockSize / 2;
    for (size_t b = 0; b < m.scales.size(); ++b) {
      const uint8_t* block = m.packed.data() + b * bytes_per_block;
      zero_blocks += std::all_of(block, block + bytes_per_block, [](uint8_t x) { return (x & 0x77) == 0; });
      const uint8_t s = m.scales[b];
      const uint8_t mag = s & 0x7F;
      if (mag == 0x7F) {
        ++nan_scales;
        continue;
      }
      if (mag == 0) {
        ++zero_scales;
        continue;
      }
      subnormal_scales += mag < 0x08;
      min_scale = std::min<int>(min_scale, s);
      max_scale = std::max<int>(max_scale, s);
      const double eff =
          std::fabs(static_cast<double>(e4m3_to_float(s)) * static_cast<double>(m.global_dequant));
      eff_min = std::min(eff_min, eff);
      eff_max = std::max(eff_max, eff);
    }
  }
  const Nvfp4Matrix& first = experts.front().*which;
  std::string hist;
  for (size_t i = 0; i < 8; ++i)
    hist += fmt::format(
        "{}{:g}:{:.0f}%", i ? " " : "", kE2m1Magnitudes[i],
        100.0 * static_cast<double>(magnitude[i]) / static_cast<double>(std::max<int64_t>(1, codes)));
  const std::string scale_range = max_scale < 0
                                      ? "none"
                                      : fmt::format("[{:#04x} {:.4g} .. {:#04x} {:.4g}]", min_scale,
                                                    e4m3_to_float(static_cast<uint8_t>(min_scale)), max_scale,
                                                    e4m3_to_float(static_cast<uint8_t>(max_scale)));
  const std::string eff_range = eff_max > 0 ? fmt::format("[{:.3g} .. {:.3g}]", eff_min, eff_max) : "none";
  return fmt::format(
      "{:<11}nvfp4 {} x {}  |code| {} -0:{} zero-blocks {}/{}  e4m3 {} subnormal {} zero {} nan {}  S_d "
      "[{:.4g} .. {:.4g}]  "
      "effective {}\n",
      name, experts.size(), dims({first.rows, first.cols}), hist, negative_zero, zero_blocks,
      codes / kNvfp4BlockSize, scale_range, subnormal_scales, zero_scales, nan_scales, sd_min, sd_max,
      eff_range);
}

}  // namespace

std::string describe_case_tensors(const Case& c) {
  const Shape& s = c.recipe.shape;
  const auto f32 = [](float x) { return static_cast<double>(x); };
  const auto i32 = [](int32_t x) { return static_cast<double>(x); };
  std::string out;
  out += real_line("hidden", "bf16", dims({s.tokens, s.hidden}), c.hidden,
                   [](uint16_t b) { return static_cast<double>(bf16_to_float(b)); });
  out += real_line("logits", "fp32", dims({s.tokens, s.experts}), c.logits, f32);
  out += real_line("bias", "fp32", dims({static_cast<int64_t>(c.bias.size())}), c.bias, f32);
  out += real_line("token_ids", "int32", dims({static_cast<int64_t>(c.token_ids.size())}), c.token_ids, i32);
  if (!c.hash_table.empty() && s.top_k > 0) {
    int64_t repeated_rows = 0;
    for (size_t row = 0; row + static_cast<size_t>(s.top_k) <= c.hash_table.size();
         row += static_cast<size_t>(s.top_k)) {
      std::vector<int32_t> ids(c.hash_table.begin() + static_cast<std::ptrdiff_t>(row),
                               c.hash_table.begin() + static_cast<std::ptrdiff_t>(row) + s.top_k);
      std::sort(ids.begin(), ids.end());
      repeated_rows += std::adjacent_find(ids.begin(), ids.end()) != ids.end();
    }
    std::string line =
        real_line("hash_table", "int32", dims({static_cast<int64_t>(c.hash_table.size()) / s.top_k, s.top_k}),
                  c.hash_table, i32);
    line.pop_back();
    out += fmt::format("{}  rows with a repeated id {}\n", line, repeated_rows);
  } else {
    out += real_line("hash_table", "int32", "[0]", c.hash_table, i32);
  }
  out += nvfp4_line("gate", c.experts, &ExpertWeights::gate);
  out += nvfp4_line("up", c.experts, &ExpertWeights::up);
  out += nvfp4_line("down", c.experts, &ExpertWeights::down);
  out += real_line("a1_scale", "fp32", dims({static_cast<int64_t>(c.a1_scale.size())}), c.a1_scale, f32);
  out += real_line("a2_scale", "fp32", dims({static_cast<int64_t>(c.a2_scale.size())}), c.a2_scale, f32);
  return out;
}

}  // namespace moefuzz
