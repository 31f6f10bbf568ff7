// The safetensors reader (core/safetensors.h) and SHA-256 (core/sha256.h): a file written by the
// test reads back tensor by tensor and slice by slice; every hostile header is one InputError
// naming the problem, never a crash or an allocation the file's size does not back.
#include "core/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "core/sha256.h"
#include "support/modelopt_checkpoint.h"

namespace {

namespace fs = std::filesystem;
using moefuzz::InputError;
using moefuzz::SafetensorsFile;

class SafetensorsTest : public ::testing::Test {
 protected:
  fs::path dir_ = fs::path(::testing::TempDir()) / ("safetensors_test_" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir_); }
  void TearDown() override { fs::remove_all(dir_); }

  // A raw file: 8-byte length of `header` (or `claimed_len`), the header, then `data`.
  fs::path raw(const std::string& header, const std::string& data = "", uint64_t claimed_len = UINT64_MAX) {
    const fs::path p = dir_ / "raw.safetensors";
    std::ofstream out(p, std::ios::binary);
    const uint64_t n = claimed_len == UINT64_MAX ? header.size() : claimed_len;
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
    out << header << data;
    return p;
  }
  void expect_rejected(const fs::path& p, const std::string& needle) {
    try {
      SafetensorsFile f(p.string());
      ADD_FAILURE() << "accepted; expected an error containing: " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
};

TEST_F(SafetensorsTest, ReadsTensorsRowsAndMetadata) {
  TensorMap m;
  m["a"] = {"U8", {3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23}};
  m["s"] = {"F32", {}, f32_bytes({2.5f})};
  write_safetensors(dir_ / "t.safetensors", m, {{"format", "pt"}});
  SafetensorsFile f((dir_ / "t.safetensors").string());
  EXPECT_EQ(f.metadata().at("format"), "pt");
  const auto& a = f.tensor("a");
  EXPECT_EQ(a.dtype, moefuzz::SafeDtype::kU8);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(a.row_bytes(), 4);
  EXPECT_EQ(f.read_all(a), m["a"].bytes);
  EXPECT_EQ(f.read_rows(a, 1, 3, 1, 3), (std::vector<uint8_t>{11, 12, 21, 22}));
  EXPECT_EQ(f.read_rows(a, 0, 2, 0, 4), (std::vector<uint8_t>{0, 1, 2, 3, 10, 11, 12, 13}));
  EXPECT_EQ(f.read_all(f.tensor("s")), f32_bytes({2.5f}));
  EXPECT_THROW((void)f.read_rows(a, 2, 4, 0, 4), InputError);
  EXPECT_THROW((void)f.read_rows(a, 0, 1, 0, 5), InputError);
  EXPECT_THROW((void)f.tensor("missing"), InputError);
}

TEST_F(SafetensorsTest, HostileFilesAreOneClearError) {
  const std::string ok_entry = R"("a":{"dtype":"U8","shape":[2,2],"data_offsets":[0,4]})";
  expect_rejected(raw("{" + ok_entry + "}", "abcd", 1ull << 40), "exceeds the limit");
  expect_rejected(raw("{" + ok_entry + "}", "", 4000), "runs past the end");
  expect_rejected(raw("{" + ok_entry + "}", "ab"), "outside the 2 bytes of data");
  expect_rejected(raw("{\"a\":{\"dtype\":\"U8\",", "abcd"), "not valid JSON");
  expect_rejected(raw("[1,2]", ""), "not a JSON object");
  expect_rejected(raw("{\"a\":" + std::string(5000, '[') + std::string(5000, ']') + "}"), "nests deeper");
  expect_rejected(raw(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,4]}})", "abcd"),
                  "needs 16 bytes");
  expect_rejected(
      raw(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296,16],"data_offsets":[0,4]}})", "abcd"),
      "more than 2^64");
  expect_rejected(raw(R"({"a":{"dtype":"U8","shape":[-2,2],"data_offsets":[0,4]}})", "abcd"), "non-negative");
  expect_rejected(raw(R"({"a":{"dtype":"U8","shape":[2,2],"data_offsets":[4,0]}})", "abcd"), "outside");
  expect_rejected(raw(R"({"a":{"dtype":"U8","shape":[2,2]}})", "abcd"), "data_offsets");
  expect_rejected(raw(R"({"a":{"shape":[2,2],"data_offsets":[0,4]}})", "abcd"), "dtype");
  expect_rejected(raw(R"({"__metadata__":{"k":1}})"), "not a string");
  expect_rejected(raw("", "", 0), "not a JSON object");
  {
    std::ofstream(dir_ / "short.safetensors") << "abc";
    expect_rejected(dir_ / "short.safetensors", "too short");
  }
  expect_rejected(dir_ / "absent.safetensors", "cannot open");
  expect_rejected(dir_, "not a regular file");
  // An unknown dtype is kept (a newer format revision) but refused by name when read.
  SafetensorsFile f(raw(R"({"a":{"dtype":"F4","shape":[8],"data_offsets":[0,4]}})", "abcd").string());
  try {
    (void)f.tensor("a");
    ADD_FAILURE() << "an unknown dtype was readable";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("dtype F4"), std::string::npos) << e.what();
  }
}

TEST(Sha256, KnownAnswers) {
  // FIPS 180-4 examples (NIST CSRC "Examples with intermediate values").
  const auto hex = [](const std::string& s) {
    moefuzz::Sha256 h;
    h.update({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
    return h.hex();
  };
  EXPECT_EQ(hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Fed in odd pieces: the same digest.
  moefuzz::Sha256 h;
  const std::string a(1000, 'a');
  for (int i = 0; i < 1000; ++i) h.update({reinterpret_cast<const uint8_t*>(a.data()), 1000});
  EXPECT_EQ(h.hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");  // 10^6 x 'a'
}

}  // namespace
