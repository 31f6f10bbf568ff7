// Header validation follows the reference implementation's rules (safetensors/src/tensor.rs,
// Metadata::validate): entries inside the data, byte size = elements * dtype size, string metadata.
#include "core/safetensors.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/errors.h"

namespace moefuzz {
namespace {

struct DtypeRow {
  std::string_view name;
  SafeDtype dtype;
  int64_t bytes;
};
constexpr std::array<DtypeRow, 15> kDtypes = {{
    {"BOOL", SafeDtype::kBool, 1},
    {"U8", SafeDtype::kU8, 1},
    {"I8", SafeDtype::kI8, 1},
    {"F8_E4M3", SafeDtype::kF8E4M3, 1},
    {"F8_E5M2", SafeDtype::kF8E5M2, 1},
    {"I16", SafeDtype::kI16, 2},
    {"U16", SafeDtype::kU16, 2},
    {"F16", SafeDtype::kF16, 2},
    {"BF16", SafeDtype::kBF16, 2},
    {"I32", SafeDtype::kI32, 4},
    {"U32", SafeDtype::kU32, 4},
    {"F32", SafeDtype::kF32, 4},
    {"I64", SafeDtype::kI64, 8},
    {"U64", SafeDtype::kU64, 8},
    {"F64", SafeDtype::kF64, 8},
}};

// Deepest nesting of [ and { outside strings. The header of a real file nests 3 deep ({name:
// {shape: [..]}}); checking this before parsing keeps a hostile "[[[[..." from costing stack or time.
size_t nesting_depth(std::string_view json) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : json) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '[' || c == '{') deepest = std::max(deepest, ++depth);
    if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  return deepest;
}

std::string printable(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 120; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    out += c >= 0x20 && c < 0x7F ? std::string(1, static_cast<char>(c)) : fmt::format("\\x{:02X}", c);
  }
  return s.size() > 120 ? out + "..." : out;
}

}  // namespace

SafeDtype parse_safe_dtype(std::string_view name) {
  for (const auto& row : kDtypes)
    if (row.name == name) return row.dtype;
  return SafeDtype::kOther;
}
std::string_view safe_dtype_name(SafeDtype d) {
  for (const auto& row : kDtypes)
    if (row.dtype == d) return row.name;
  return "other";
}
int64_t safe_dtype_bytes(SafeDtype d) {
  for (const auto& row : kDtypes)
    if (row.dtype == d) return row.bytes;
  return 0;
}

int64_t TensorInfo::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // checked against the file's size when the header was read
  return n;
}
int64_t TensorInfo::row_bytes() const {
  if (shape.empty()) return static_cast<int64_t>(bytes);
  const int64_t rows = shape[0];
  return rows == 0 ? 0 : static_cast<int64_t>(bytes) / rows;
}

SafetensorsFile::SafetensorsFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw InputError(fmt::format("{}: cannot open: {}", path_, std::strerror(errno)));
  try {
    struct stat st {};
    if (::fstat(fd_, &st) != 0)
      throw InputError(fmt::format("{}: cannot stat: {}", path_, std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) throw InputError(fmt::format("{}: not a regular file", path_));
    file_bytes_ = static_cast<uint64_t>(st.st_size);
    if (file_bytes_ < 8)
      throw InputError(
          fmt::format("{}: {} bytes, too short for a safetensors file (8-byte header length "
                      "first)",
                      path_, file_bytes_));
    std::array<uint8_t, 8> len_bytes{};
    TensorInfo whole;
    whole.name = "(header)";
    pread_exact(len_bytes.data(), 8, 0, whole);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[static_cast<size_t>(i)];
    if (header_len > kMaxSafetensorsHeaderBytes)
      throw InputError(
          fmt::format("{}: header length {} exceeds the limit of {} bytes (not a safetensors file?)", path_,
                      header_len, kMaxSafetensorsHeaderBytes));
    if (header_len > file_bytes_ - 8)
      throw InputError(fmt::format("{}: header length {} runs past the end of the {}-byte file (truncated?)",
                                   path_, header_len, file_bytes_));
    std::string header(header_len, '\0');
    pread_exact(reinterpret_cast<uint8_t*>(header.data()), header_len, 8, whole);
    if (header.empty() || header.front() != '{')
      throw InputError(fmt::format("{}: header is not a JSON object (starts with '{}')", path_,
                                   printable(header.substr(0, 16))));
    if (nesting_depth(header) > 4)
      throw InputError(fmt::format("{}: header JSON nests deeper than a safetensors header can", path_));
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(header);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(fmt::format("{}: header is not valid JSON: {}", path_, e.what()));
    }
    if (!j.is_object()) throw InputError(fmt::format("{}: header is not a JSON object", path_));
    const uint64_t data_begin = 8 + header_len;
    const uint64_t data_bytes = file_bytes_ - data_begin;
    for (const auto& [name, entry] : j.items()) {
      if (name == "__metadata__") {
        if (!entry.is_object())
          throw InputError(fmt::format("{}: __metadata__ is not an object of strings", path_));
        for (const auto& [k, v] : entry.items()) {
          if (!v.is_string())
            throw InputError(
                fmt::format("{}: __metadata__ value of '{}' is not a string", path_, printable(k)));
          metadata_[k] = v.get<std::string>();
        }
        continue;
      }
      // A copy, not the structured binding: clang before C++20's P1091 cannot capture a binding.
      const std::string tensor_name = name;
      const auto bad = [&](const std::string& why) {
        return InputError(fmt::format("{}: tensor '{}': {}", path_, printable(tensor_name), why));
      };
      if (!entry.is_object()) throw bad("entry is not an object {dtype, shape, data_offsets}");
      const auto dtype = entry.find("dtype");
      const auto shape = entry.find("shape");
      const auto offsets = entry.find("data_offsets");
      if (dtype == entry.end() || !dtype->is_string()) throw bad("missing or non-string 'dtype'");
      if (shape == entry.end() || !shape->is_array()) throw bad("missing or non-array 'shape'");
      if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2)
        throw bad("'data_offsets' is not [begin, end]");
      TensorInfo t;
      t.name = name;
      t.dtype_name = dtype->get<std::string>();
      t.dtype = parse_safe_dtype(t.dtype_name);
      if (shape->size() > kMaxSafetensorsRank)
        throw bad(fmt::format("rank {} exceeds {}", shape->size(), kMaxSafetensorsRank));
      uint64_t elements = 1;
      bool overflow = false;
      for (const auto& d : *shape) {
        if (!d.is_number_unsigned()) throw bad("shape entries must be non-negative integers");
        const uint64_t dim = d.get<uint64_t>();
        if (dim > static_cast<uint64_t>(INT64_MAX)) throw bad("a dimension overflows int64");
        t.shape.push_back(static_cast<int64_t>(dim));
        overflow = overflow || __builtin_mul_overflow(elements, dim, &elements);
      }
      for (const auto& o : *offsets)
        if (!o.is_number_unsigned()) throw bad("data_offsets must be non-negative integers");
      const uint64_t begin = (*offsets)[0].get<uint64_t>();
      const uint64_t end = (*offsets)[1].get<uint64_t>();
      if (begin > end || end > data_bytes)
        throw bad(fmt::format("data_offsets [{}, {}] lie outside the {} bytes of data (truncated file?)",
                              begin, end, data_bytes));
      const auto size = static_cast<uint64_t>(safe_dtype_bytes(t.dtype));
      uint64_t expect = 0;
      if (t.dtype != SafeDtype::kOther &&
          (overflow || __builtin_mul_overflow(elements, size, &expect) || expect != end - begin))
        throw bad(fmt::format("shape {} of {} needs {} bytes but data_offsets span {}",
                              nlohmann::json(t.shape).dump(), t.dtype_name,
                              overflow ? std::string("more than 2^64") : std::to_string(elements * size),
                              end - begin));
      t.begin = data_begin + begin;
      t.bytes = end - begin;
      tensors_.emplace(name, std::move(t));
    }
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() { ::close(fd_); }

bool SafetensorsFile::has(std::string_view name) const { return tensors_.find(name) != tensors_.end(); }

const TensorInfo& SafetensorsFile::tensor(std::string_view name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) throw InputError(fmt::format("{}: no tensor '{}'", path_, name));
  if (it->second.dtype == SafeDtype::kOther)
    throw InputError(fmt::format("{}: tensor '{}': dtype {} is not one this reader knows", path_, name,
                                 printable(it->second.dtype_name)));
  return it->second;
}

void SafetensorsFile::pread_exact(uint8_t* dst, uint64_t size, uint64_t offset, const TensorInfo& t) const {
  uint64_t got = 0;
  while (got < size) {
    const ssize_t n = ::pread(fd_, dst + got, size - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(fmt::format("{}: cannot read {}: {}", path_, t.name, std::strerror(errno)));
    if (n == 0)
      throw InputError(
          fmt::format("{}: file ended while reading {} (truncated after it was opened?)", path_, t.name));
    got += static_cast<uint64_t>(n);
  }
}

std::vector<uint8_t> SafetensorsFile::read_rows(const TensorInfo& t, int64_t row_begin, int64_t row_end,
                                                int64_t col_byte_begin, int64_t col_byte_end) const {
  const int64_t rows = t.shape.empty() ? 1 : t.shape[0];
  const int64_t row_bytes = t.row_bytes();
  if (row_begin < 0 || row_begin > row_end || row_end > rows || col_byte_begin < 0 ||
      col_byte_begin > col_byte_end || col_byte_end > row_bytes)
    throw InputError(
        fmt::format("{}: tensor '{}': slice rows [{}, {}) bytes [{}, {}) outside its {} x {} bytes", path_,
                    t.name, row_begin, row_end, col_byte_begin, col_byte_end, rows, row_bytes));
  const int64_t width = col_byte_end - col_byte_begin;
  std::vector<uint8_t> out(static_cast<size_t>((row_end - row_begin) * width));
  if (out.empty()) return out;
  if (width == row_bytes) {  // contiguous rows: one read
    pread_exact(out.data(), out.size(), t.begin + static_cast<uint64_t>(row_begin * row_bytes), t);
    return out;
  }
  for (int64_t r = row_begin; r < row_end; ++r)
    pread_exact(out.data() + (r - row_begin) * width, static_cast<uint64_t>(width),
                t.begin + static_cast<uint64_t>(r * row_bytes + col_byte_begin), t);
  return out;
}

std::vector<uint8_t> SafetensorsFile::read_all(const TensorInfo& t) const {
  std::vector<uint8_t> out(t.bytes);
  if (!out.empty()) pread_exact(out.data(), t.bytes, t.begin, t);
  return out;
}

}  // namespace moefuzz
