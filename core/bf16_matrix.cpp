#include "core/bf16_matrix.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace moefuzz {

Bf16Matrix::Bf16Matrix(int64_t r, int64_t c) : rows(r), cols(c) {
  constexpr int64_t kMaxElements = int64_t{1} << 40;
  if (r < 0 || c < 0 || (c > 0 && r > kMaxElements / c))
    throw InputError(
        fmt::format("bf16 matrix shape [{}, {}]: need rows, cols >= 0 and fewer than 2^40 elements", r, c));
  bits.assign(static_cast<size_t>(r * c), 0);
}

}  // namespace moefuzz
