#pragma once
// SHA-256 (FIPS 180-4) of a byte stream or a whole file, as lowercase hex. Recipes pin the external
// tensor files they name (weights, captured inputs) by this hash, so a finding replays only against
// the bytes it was found with (docs/weights.md). Written here rather than linked from OpenSSL: see
// docs/decisions.md ("SHA-256 without OpenSSL").
//
// Example:
//   moefuzz::Sha256 h;
//   h.update(bytes);
//   std::string hex = h.hex();                                  // 64 lowercase hex digits
//   std::string file_hex = moefuzz::sha256_file("w.safetensors");  // throws InputError if unreadable
#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace moefuzz {

class Sha256 {
 public:
  Sha256();
  void update(std::span<const uint8_t> bytes);
  // Finishes the hash (the object is spent afterwards) and returns it as 64 lowercase hex digits.
  std::string hex();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// Hash of a file's bytes, read in fixed-size chunks (constant memory). Throws InputError naming the
// path when the file cannot be opened or read.
std::string sha256_file(const std::string& path);

// Whether `s` is 64 lowercase hex digits.
bool is_sha256_hex(std::string_view s);

}  // namespace moefuzz
