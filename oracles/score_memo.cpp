#include "oracles/score_memo.h"

#include <bit>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "oracles/fast_scores.h"
#include "oracles/multiprecision.h"

namespace moefuzz {
namespace {

// Bounds on what one thread keeps (~40 MB at most); beyond them the memo starts over.
constexpr size_t kMaxScalars = size_t{1} << 20;
constexpr size_t kMaxRows = size_t{1} << 14;

template <class Map, class Key, class Compute>
auto& memo(Map& map, const Key& key, size_t cap, Compute compute) {
  auto it = map.find(key);
  if (it != map.end()) return it->second;
  if (map.size() >= cap) map.clear();
  return map.emplace(key, compute()).first->second;
}

enum class Fn : uint64_t { kSigmoid = 1, kSqrtSoftplus = 2 };

uint64_t scalar_key(Fn f, float x) { return (static_cast<uint64_t>(f) << 32) | std::bit_cast<uint32_t>(x); }

thread_local std::unordered_map<uint64_t, double> t_scalars;
thread_local std::unordered_map<uint64_t, double> t_biased;
thread_local std::unordered_map<std::string, std::vector<double>> t_rows;

}  // namespace

// Each compute step tries the double-double path first (oracles/fast_scores.h: bit-identical when it
// answers) and asks Boost only when it cannot decide the rounding.
double exact_sigmoid(float x) {
  return memo(t_scalars, scalar_key(Fn::kSigmoid, x), kMaxScalars, [&] {
    double d;
    return fast_sigmoid(x, &d) ? d : to_double(hp_sigmoid(HighPrecision(x)));
  });
}

double exact_sqrt_softplus(float x) {
  return memo(t_scalars, scalar_key(Fn::kSqrtSoftplus, x), kMaxScalars, [&] {
    double d;
    return fast_sqrt_softplus(x, &d) ? d : to_double(hp_sqrt_softplus(HighPrecision(x)));
  });
}

double exact_sigmoid_plus(float x, float bias) {
  const uint64_t key =
      (static_cast<uint64_t>(std::bit_cast<uint32_t>(x)) << 32) | std::bit_cast<uint32_t>(bias);
  return memo(t_biased, key, kMaxScalars, [&] {
    double d;
    return fast_sigmoid_plus(x, bias, &d) ? d : to_double(hp_sigmoid(HighPrecision(x)) + HighPrecision(bias));
  });
}

const std::vector<double>& exact_softmax(std::span<const float> row) {
  std::string key(reinterpret_cast<const char*>(row.data()), row.size() * sizeof(float));
  return memo(t_rows, key, kMaxRows, [&] {
    std::vector<double> out;
    if (fast_softmax(row, out)) return out;
    const std::vector<HighPrecision> probs = hp_softmax(row);
    out.resize(probs.size());
    for (size_t e = 0; e < probs.size(); ++e) out[e] = to_double(probs[e]);
    return out;
  });
}

}  // namespace moefuzz
