#pragma once
// A reader for the safetensors format (https://huggingface.co/docs/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON {"name": {"dtype", "shape", "data_offsets"},
// "__metadata__": {...}}, then the raw little-endian tensor bytes; data_offsets are [begin, end)
// relative to the end of the header. Debian packages no C++ reader (docs/decisions.md), so this is
// one on nlohmann-json.
//
// Opening reads and validates the header only (size, JSON, every entry's dtype, shape and offsets
// against the file's size); tensor bytes are read on demand with pread, a row range at a time, so a
// multi-gigabyte checkpoint costs only the slices a case uses. Every problem throws InputError
// "<path>: <what>" naming the tensor where one is involved; nothing is allocated from a size the
// file claims before that size has been checked against the file.
//
// Example:
//   moefuzz::SafetensorsFile f("layer.safetensors");
//   const moefuzz::TensorInfo& w = f.tensor("model.layers.3.mlp.experts.0.gate_proj.weight");
//   // w.dtype == SafeDtype::kU8, w.shape == {I, H/2}
//   std::vector<uint8_t> rows = f.read_rows(w, 0, 4, 0, w.row_bytes());  // the first 4 rows
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace moefuzz {

// The format's dtypes this reader sizes; any other dtype string (a newer format revision) is kOther:
// its entry must still lie inside the data, and reading it is refused by name.
enum class SafeDtype : uint8_t {
  kBool,
  kU8,
  kI8,
  kF8E4M3,
  kF8E5M2,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kI64,
  kU64,
  kF64,
  kOther
};

// "F8_E4M3" -> kF8E4M3, ...; kOther for a name not listed above.
SafeDtype parse_safe_dtype(std::string_view name);
std::string_view safe_dtype_name(SafeDtype d);
int64_t safe_dtype_bytes(SafeDtype d);  // 0 for kOther

// The header is at most this large: the limit of the reference implementation (safetensors
// MAX_HEADER_SIZE = 100 MB); a DeepSeek-V3 shard's header is about 1 MB.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;
// At most this many dimensions per tensor (more is no real checkpoint; bounds the shape vectors).
inline constexpr size_t kMaxSafetensorsRank = 8;

struct TensorInfo {
  std::string name;
  SafeDtype dtype = SafeDtype::kU8;
  std::string dtype_name;  // as the header spells it
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // absolute file offset of the first byte
  uint64_t bytes = 0;  // == product(shape) * dtype size (checked)
  int64_t elements() const;
  // Bytes of one row: product of every dimension after the first, times the dtype size (the whole
  // tensor for rank 0 and 1 is one row of `bytes` / one element per row respectively).
  int64_t row_bytes() const;
};

class SafetensorsFile {
 public:
  // Opens and validates the header. Throws InputError.
  explicit SafetensorsFile(std::string path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  bool has(std::string_view name) const;
  // Throws InputError "<path>: no tensor '<name>'" when absent.
  const TensorInfo& tensor(std::string_view name) const;
  const std::map<std::string, TensorInfo, std::less<>>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // Bytes [col_byte_begin, col_byte_end) of rows [row_begin, row_end) of a tensor viewed as
  // [shape[0], row_bytes()], concatenated. Ranges are checked (InputError when out of the tensor).
  std::vector<uint8_t> read_rows(const TensorInfo& t, int64_t row_begin, int64_t row_end,
                                 int64_t col_byte_begin, int64_t col_byte_end) const;
  // The whole tensor.
  std::vector<uint8_t> read_all(const TensorInfo& t) const;

 private:
  void pread_exact(uint8_t* dst, uint64_t size, uint64_t offset, const TensorInfo& t) const;
  std::string path_;
  int fd_ = -1;
  uint64_t file_bytes_ = 0;
  std::map<std::string, TensorInfo, std::less<>> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace moefuzz
