// The recipe text format v1 (grammar in core/recipe_text.h). The parser is written for hostile
// bytes: std::from_chars only (no exceptions, no locale, overflow reported), every size bounded
// before it is used, and every problem is an InputError naming origin:line and the field.
#include "core/recipe_text.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <functional>
#include <span>

#include "core/errors.h"
#include "core/pinned_files.h"
#include "core/report.h"

namespace moefuzz {
namespace {

using namespace std::string_view_literals;

// ---- enum names (index = enumerator value) ----

template <class Enum>
struct EnumNames;
#define MOEFUZZ_ENUM_NAMES(Enum, ...)                   \
  template <>                                           \
  struct EnumNames<Enum> {                              \
    static constexpr std::array kNames = {__VA_ARGS__}; \
  };
MOEFUZZ_ENUM_NAMES(RoutingMode, "softmax"sv, "sigmoid_grouped"sv, "hash"sv)
MOEFUZZ_ENUM_NAMES(ScoreFunc, "sqrt_softplus"sv, "sigmoid"sv, "softmax"sv)
MOEFUZZ_ENUM_NAMES(ScalePlacement, "topk"sv, "combine"sv)
MOEFUZZ_ENUM_NAMES(SharedFusion, "separate"sv, "fused"sv)
MOEFUZZ_ENUM_NAMES(ActivationFormat, "nvfp4"sv, "bf16"sv, "fp8_group"sv)
MOEFUZZ_ENUM_NAMES(WeightFormat, "nvfp4"sv, "bf16"sv, "mxfp4"sv, "fp8_block"sv)
MOEFUZZ_ENUM_NAMES(ActScaleMode, "global"sv, "per_expert"sv)
MOEFUZZ_ENUM_NAMES(LogitProfile, "normal"sv, "all_negative"sv, "very_negative"sv, "ties"sv, "near_ties"sv,
                   "large"sv)
MOEFUZZ_ENUM_NAMES(BiasProfile, "small"sv, "dominant"sv, "negative"sv, "zero"sv)
MOEFUZZ_ENUM_NAMES(TableProfile, "distinct"sv, "duplicates"sv)
MOEFUZZ_ENUM_NAMES(WeightProfile, "normal"sv, "zero_blocks"sv, "wide_scales"sv, "tiny_scales"sv,
                   "expert_spread"sv)
MOEFUZZ_ENUM_NAMES(HiddenProfile, "normal"sv, "zero_blocks"sv, "thresholds"sv, "token_spread"sv, "outliers"sv)
MOEFUZZ_ENUM_NAMES(ActScaleProfile, "calibrated"sv, "far"sv)
MOEFUZZ_ENUM_NAMES(LoadProfile, "uniform"sv, "zero_token_experts"sv, "one_expert"sv)
MOEFUZZ_ENUM_NAMES(W13Order, "gate_up"sv, "up_gate"sv)
#undef MOEFUZZ_ENUM_NAMES

template <class Enum>
std::string_view enum_name(Enum v) {
  const auto& names = EnumNames<Enum>::kNames;
  const size_t i = static_cast<uint8_t>(v);
  return i < names.size() ? names[i] : "invalid"sv;
}

// ---- messages ----

// Outside text shown in a message: printable ASCII kept, other bytes as \xNN, long text cut.
std::string quoted(std::string_view s) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < 64; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '\'')
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02X}", c);
  }
  if (s.size() > 64) out += "...";
  return out + "'";
}

// Thrown by value parsers; parse_recipe adds origin, line and field.
struct BadValue {
  std::string why;
};

// ---- scalar values ----

bool is_space(char c) { return c == ' ' || c == '\t'; }
std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}
bool has_hex_prefix(std::string_view s) {
  return s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
}

// Parses a hex integer after its 0x prefix; nullopt on junk, BadValue on overflow.
std::optional<uint64_t> parse_hex(std::string_view s) {
  uint64_t v = 0;
  const auto digits = s.substr(2);
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, 16);
  if (ec == std::errc::result_out_of_range) throw BadValue{fmt::format("{} overflows 64 bits", quoted(s))};
  if (ec != std::errc() || ptr != digits.data() + digits.size() || digits.empty()) return std::nullopt;
  return v;
}

int64_t parse_int64(std::string_view s) {
  if (has_hex_prefix(s)) {
    const auto v = parse_hex(s);
    if (!v) throw BadValue{fmt::format("{} is not an integer", quoted(s))};
    if (*v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw BadValue{fmt::format("{} is out of range for a signed 64-bit integer", quoted(s))};
    return static_cast<int64_t>(*v);
  }
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec == std::errc::result_out_of_range)
    throw BadValue{fmt::format("{} is out of range for a signed 64-bit integer", quoted(s))};
  if (ec != std::errc() || ptr != s.data() + s.size())
    throw BadValue{fmt::format("{} is not an integer", quoted(s))};
  return v;
}

uint64_t parse_uint64(std::string_view s) {
  if (has_hex_prefix(s)) {
    if (const auto v = parse_hex(s)) return *v;
    throw BadValue{fmt::format("{} is not an unsigned integer", quoted(s))};
  }
  uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec == std::errc::result_out_of_range) throw BadValue{fmt::format("{} overflows 64 bits", quoted(s))};
  if (ec != std::errc() || ptr != s.data() + s.size())
    throw BadValue{fmt::format("{} is not an unsigned integer", quoted(s))};
  return v;
}

double parse_real(std::string_view s) {
  const bool negative = !s.empty() && s[0] == '-';
  if (has_hex_prefix(s.substr(negative ? 1 : 0))) {
    const auto v = parse_hex(s.substr(negative ? 1 : 0));
    if (!v) throw BadValue{fmt::format("{} is not a number", quoted(s))};
    const double d = static_cast<double>(*v);
    return negative ? -d : d;
  }
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  if (ec == std::errc::result_out_of_range)
    throw BadValue{fmt::format("{} is out of double range", quoted(s))};
  if (ec != std::errc() || ptr != s.data() + s.size())
    throw BadValue{fmt::format("{} is not a number", quoted(s))};
  return v;
}

bool parse_bool(std::string_view s) {
  if (s == "true") return true;
  if (s == "false") return false;
  throw BadValue{fmt::format("{} is not a boolean (true or false)", quoted(s))};
}

template <class Enum>
Enum parse_enum(std::string_view s) {
  if (const auto v = parse_name<Enum>(s)) return *v;
  throw BadValue{fmt::format("unknown name {} (one of: {})", quoted(s), names_of<Enum>())};
}

// Scalar fields hold one token: whitespace inside the value is trailing garbage.
std::string_view single_token(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i)
    if (is_space(s[i]))
      throw BadValue{fmt::format("trailing garbage {} after the value", quoted(trim(s.substr(i))))};
  return s;
}

template <class T>
T parse_value(std::string_view s) {
  s = single_token(s);
  if constexpr (std::is_same_v<T, int64_t>) {
    return parse_int64(s);
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    return parse_uint64(s);
  } else if constexpr (std::is_same_v<T, double>) {
    return parse_real(s);
  } else if constexpr (std::is_same_v<T, bool>) {
    return parse_bool(s);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return std::string(s);  // validate() checks the character set
  } else {
    return parse_enum<T>(s);
  }
}

template <class T>
std::string print_value(const T& v) {
  if constexpr (std::is_same_v<T, double>) {
    return format_real(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return v;
  } else if constexpr (std::is_enum_v<T>) {
    return std::string(enum_name(v));
  } else {
    return fmt::format("{}", v);
  }
}

// ---- the field table: one row per key, in to_text order ----

struct Field {
  std::string_view key;
  std::string_view group;  // a comment to_text writes before the first key of a group
  std::function<std::string(const CaseRecipe&)> print;
  std::function<void(std::string_view, CaseRecipe&)> parse;
  // Whether to_text writes the key (the external-file keys only when their file is named, so a
  // recipe without files prints as it always did). Empty = always.
  std::function<bool(const CaseRecipe&)> present;
};

template <class Access>
Field field(std::string_view key, Access access, std::string_view group = {}) {
  return Field{key,
               group,
               [access](const CaseRecipe& r) { return print_value(access(const_cast<CaseRecipe&>(r))); },
               [access](std::string_view v, CaseRecipe& r) {
                 auto& slot = access(r);
                 slot = parse_value<std::remove_reference_t<decltype(slot)>>(v);
               },
               {}};
}

Field present_when(Field f, std::function<bool(const CaseRecipe&)> present) {
  f.present = std::move(present);
  return f;
}

// `fp8_scales = fp32 | ue8m0` (Quantization::fp8_ue8m0), written only when ue8m0 so that every other
// recipe prints as it always did.
Field fp8_scales_field() {
  return Field{"fp8_scales",
               {},
               [](const CaseRecipe& r) { return r.quant.fp8_ue8m0 ? "ue8m0" : "fp32"; },
               [](std::string_view v, CaseRecipe& r) {
                 v = single_token(v);
                 if (v != "fp32" && v != "ue8m0")
                   throw BadValue{fmt::format("unknown name {} (one of: fp32, ue8m0)", quoted(v))};
                 r.quant.fp8_ue8m0 = v == "ue8m0";
               },
               [](const CaseRecipe& r) { return r.quant.fp8_ue8m0; }};
}

#define MOEFUZZ_FIELD(key, member, ...) \
  field(                                \
      key, [](CaseRecipe & r) -> auto& { return r.member; } __VA_OPT__(, ) __VA_ARGS__)

const std::vector<Field>& fields() {
  static const std::vector<Field> table = {
      MOEFUZZ_FIELD("seed", seed),
      MOEFUZZ_FIELD("profile", profile),
      MOEFUZZ_FIELD("tokens", shape.tokens, "shape"),
      MOEFUZZ_FIELD("hidden", shape.hidden),
      MOEFUZZ_FIELD("inter", shape.inter),
      MOEFUZZ_FIELD("experts", shape.experts),
      MOEFUZZ_FIELD("top_k", shape.top_k),
      MOEFUZZ_FIELD("n_group", shape.n_group),
      MOEFUZZ_FIELD("topk_group", shape.topk_group),
      MOEFUZZ_FIELD("shared_experts", shape.shared_experts),
      MOEFUZZ_FIELD("routing", routing.mode, "routing"),
      MOEFUZZ_FIELD("hash_score", routing.hash_score),
      MOEFUZZ_FIELD("renormalize", routing.renormalize),
      MOEFUZZ_FIELD("correction_bias", routing.correction_bias),
      MOEFUZZ_FIELD("routed_scaling_factor", routing.routed_scaling_factor),
      MOEFUZZ_FIELD("scale_placement", routing.scale_placement),
      MOEFUZZ_FIELD("shared_fusion", routing.shared_fusion),
      MOEFUZZ_FIELD("vocab", routing.vocab),
      MOEFUZZ_FIELD("activations", quant.activations, "quantization"),
      // Written only for non-NVFP4 weights, so an NVFP4 recipe prints as it always did.
      present_when(MOEFUZZ_FIELD("weight_format", quant.weights),
                   [](const CaseRecipe& r) { return r.quant.weights != WeightFormat::kNvfp4; }),
      fp8_scales_field(),
      MOEFUZZ_FIELD("act_scales", quant.act_scales),
      MOEFUZZ_FIELD("gate_up_scale_ratio", quant.gate_up_scale_ratio),
      MOEFUZZ_FIELD("swiglu_limit", swiglu.limit, "activation (SwiGLU clamp)"),
      MOEFUZZ_FIELD("swiglu_alpha", swiglu.alpha),
      MOEFUZZ_FIELD("swiglu_beta", swiglu.beta),
      // Written only when true, so a recipe without expert biases prints as it always did.
      present_when(MOEFUZZ_FIELD("expert_bias", expert_bias),
                   [](const CaseRecipe& r) { return r.expert_bias; }),
      MOEFUZZ_FIELD("values.logits", values.logits, "value profiles"),
      MOEFUZZ_FIELD("values.bias", values.bias),
      MOEFUZZ_FIELD("values.table", values.table),
      MOEFUZZ_FIELD("values.weights", values.weights),
      MOEFUZZ_FIELD("values.hidden", values.hidden),
      MOEFUZZ_FIELD("values.act_scale", values.act_scale),
      MOEFUZZ_FIELD("values.load", values.load),
  };
  static const std::vector<Field> with_files = [] {
    std::vector<Field> all = table;
    const auto weights = [](const CaseRecipe& r) { return !r.files.weights.empty(); };
    const auto weights_sha = [](const CaseRecipe& r) { return !r.files.weights_sha256.empty(); };
    const auto inputs = [](const CaseRecipe& r) { return !r.files.inputs.empty(); };
    const auto inputs_sha = [](const CaseRecipe& r) { return !r.files.inputs_sha256.empty(); };
    const auto add = [&](Field f, std::function<bool(const CaseRecipe&)> present) {
      f.present = std::move(present);
      all.push_back(std::move(f));
    };
    add(MOEFUZZ_FIELD("weights", files.weights, "tensors from files (docs/weights.md)"), weights);
    add(MOEFUZZ_FIELD("weights_sha256", files.weights_sha256), weights_sha);
    add(MOEFUZZ_FIELD("weights_layer", files.weights_layer), weights);
    add(MOEFUZZ_FIELD("weights_w13", files.weights_w13), weights);
    add(MOEFUZZ_FIELD("inputs", files.inputs), inputs);
    add(MOEFUZZ_FIELD("inputs_sha256", files.inputs_sha256), inputs_sha);
    return all;
  }();
  return with_files;
  return table;
}
#undef MOEFUZZ_FIELD

constexpr std::string_view kEditKey = "edit";

Edit parse_edit(std::string_view value) {
  std::vector<std::string_view> words;
  while (!value.empty()) {
    size_t end = 0;
    while (end < value.size() && !is_space(value[end])) ++end;
    words.push_back(value.substr(0, end));
    value = trim(value.substr(end));
  }
  if (words.size() < 2) throw BadValue{"expected `<tensor> <index>... <value>`"};
  Edit e;
  e.tensor = std::string(words.front());  // validate() checks the name and the index count
  for (size_t i = 1; i + 1 < words.size(); ++i) {
    try {
      e.index.push_back(parse_int64(words[i]));
    } catch (const BadValue& bad) {
      throw BadValue{fmt::format("index {}: {}", i - 1, bad.why)};
    }
  }
  e.value = parse_real(words.back());
  return e;
}

std::string print_edit(const Edit& e) {
  std::string out = e.tensor;
  for (int64_t i : e.index) out += fmt::format(" {}", i);
  return out + " " + format_real(e.value);
}

[[noreturn]] void fail_at(const std::string& origin, size_t line, std::string_view key,
                          const std::string& why) {
  if (key.empty()) throw InputError(fmt::format("{}:{}: {}", origin, line, why));
  throw InputError(fmt::format("{}:{}: field '{}': {}", origin, line, key, why));
}

// Checks the raw bytes of one line (without its newline): length, NUL and control bytes.
void check_line_bytes(const std::string& origin, size_t line_no, std::string_view line) {
  if (line.size() > kMaxRecipeLineBytes)
    fail_at(origin, line_no, {},
            fmt::format("line is {} bytes, longer than the limit of {}", line.size(), kMaxRecipeLineBytes));
  for (size_t i = 0; i < line.size(); ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (c == 0) fail_at(origin, line_no, {}, fmt::format("NUL byte at column {}", i + 1));
    const bool final_cr = c == '\r' && i + 1 == line.size();
    if ((c < 0x20 && c != '\t' && !final_cr) || c == 0x7F)
      fail_at(origin, line_no, {}, fmt::format("control byte 0x{:02X} at column {}", c, i + 1));
  }
}

bool key_chars_ok(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.')) return false;
  return true;
}

}  // namespace

// ---- public API ----

std::string_view name_of(RoutingMode v) { return enum_name(v); }
std::string_view name_of(ScoreFunc v) { return enum_name(v); }
std::string_view name_of(ScalePlacement v) { return enum_name(v); }
std::string_view name_of(SharedFusion v) { return enum_name(v); }
std::string_view name_of(ActivationFormat v) { return enum_name(v); }
std::string_view name_of(WeightFormat v) { return enum_name(v); }
std::string_view name_of(ActScaleMode v) { return enum_name(v); }
std::string_view name_of(LogitProfile v) { return enum_name(v); }
std::string_view name_of(BiasProfile v) { return enum_name(v); }
std::string_view name_of(TableProfile v) { return enum_name(v); }
std::string_view name_of(WeightProfile v) { return enum_name(v); }
std::string_view name_of(HiddenProfile v) { return enum_name(v); }
std::string_view name_of(ActScaleProfile v) { return enum_name(v); }
std::string_view name_of(LoadProfile v) { return enum_name(v); }
std::string_view name_of(W13Order v) { return enum_name(v); }

template <class Enum>
std::optional<Enum> parse_name(std::string_view name) {
  const auto& names = EnumNames<Enum>::kNames;
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<Enum>(i);
  return std::nullopt;
}
template <class Enum>
std::string names_of() {
  return fmt::format("{}", fmt::join(EnumNames<Enum>::kNames, ", "));
}
#define MOEFUZZ_INSTANTIATE(Enum)                                  \
  template std::optional<Enum> parse_name<Enum>(std::string_view); \
  template std::string names_of<Enum>();
MOEFUZZ_INSTANTIATE(RoutingMode)
MOEFUZZ_INSTANTIATE(ScoreFunc)
MOEFUZZ_INSTANTIATE(ScalePlacement)
MOEFUZZ_INSTANTIATE(SharedFusion)
MOEFUZZ_INSTANTIATE(ActivationFormat)
MOEFUZZ_INSTANTIATE(ActScaleMode)
MOEFUZZ_INSTANTIATE(LogitProfile)
MOEFUZZ_INSTANTIATE(BiasProfile)
MOEFUZZ_INSTANTIATE(TableProfile)
MOEFUZZ_INSTANTIATE(WeightProfile)
MOEFUZZ_INSTANTIATE(HiddenProfile)
MOEFUZZ_INSTANTIATE(ActScaleProfile)
MOEFUZZ_INSTANTIATE(LoadProfile)
MOEFUZZ_INSTANTIATE(W13Order)
#undef MOEFUZZ_INSTANTIATE

std::string format_real(double v) {
  std::array<char, 64> buf{};
  const auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return ec == std::errc() ? std::string(buf.data(), ptr) : fmt::format("{}", v);
}

std::string to_text(const CaseRecipe& r) {
  std::string out = std::string(kRecipeMagic) + "\n";
  for (const auto& f : fields()) {
    if (f.present && !f.present(r)) continue;
    if (!f.group.empty()) out += fmt::format("# {}\n", f.group);
    out += fmt::format("{} = {}\n", f.key, f.print(r));
  }
  if (!r.edits.empty()) out += "# edits: <tensor> <index>... <value>\n";
  for (const auto& e : r.edits) out += fmt::format("{} = {}\n", kEditKey, print_edit(e));
  return out;
}

CaseRecipe parse_recipe(std::string_view text, const std::string& origin, int64_t max_case_bytes) {
  if (text.size() > kMaxRecipeTextBytes)
    throw InputError(fmt::format("{}: recipe text is {} bytes, larger than the limit of {}", origin,
                                 text.size(), kMaxRecipeTextBytes));
  const auto& table = fields();
  std::vector<size_t> field_line(table.size(), 0);  // 0 = not given, default applies
  std::vector<size_t> edit_line;
  CaseRecipe r;
  bool saw_magic = false;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    check_line_bytes(origin, line_no, line);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!saw_magic) {
      if (line == kRecipeMagic) {
        saw_magic = true;
        continue;
      }
      if (line.starts_with("MOEFUZZ"))
        fail_at(origin, line_no, {},
                fmt::format("unknown version {} (this build reads '{}')", quoted(line), kRecipeMagic));
      fail_at(origin, line_no, {},
              fmt::format("missing version line '{}' (found {})", kRecipeMagic, quoted(line)));
    }
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;
    for (size_t i = 1; i < line.size(); ++i) {  // a trailing comment starts at whitespace + '#'
      if (line[i] == '#' && is_space(line[i - 1])) {
        line = trim(line.substr(0, i));
        break;
      }
    }
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos)
      fail_at(origin, line_no, {}, fmt::format("expected `key = value`, found {}", quoted(line)));
    const std::string_view key = trim(line.substr(0, eq));
    const std::string_view value = trim(line.substr(eq + 1));
    if (!key_chars_ok(key)) fail_at(origin, line_no, {}, fmt::format("malformed key {}", quoted(key)));
    for (char c : value)
      if (static_cast<unsigned char>(c) >= 0x80)
        fail_at(origin, line_no, key, fmt::format("non-ASCII byte in value {}", quoted(value)));
    if (value.empty()) fail_at(origin, line_no, key, "missing value (truncated line?)");
    try {
      if (key == kEditKey) {
        if (r.edits.size() >= kMaxEdits)
          fail_at(origin, line_no, key, fmt::format("more than {} edits", kMaxEdits));
        r.edits.push_back(parse_edit(value));
        edit_line.push_back(line_no);
        continue;
      }
      size_t f = 0;
      while (f < table.size() && table[f].key != key) ++f;
      if (f == table.size()) fail_at(origin, line_no, {}, fmt::format("unknown key {}", quoted(key)));
      if (field_line[f] != 0)
        fail_at(origin, line_no, key, fmt::format("duplicate key (first given on line {})", field_line[f]));
      field_line[f] = line_no;
      table[f].parse(value, r);
    } catch (const BadValue& bad) {
      fail_at(origin, line_no, key, bad.why);
    }
  }
  if (!saw_magic)
    throw InputError(fmt::format("{}:1: empty text, missing version line '{}'", origin, kRecipeMagic));

  if (const auto issue = find_recipe_issue(r)) {
    if (issue->edit >= 0 && static_cast<size_t>(issue->edit) < edit_line.size())
      fail_at(origin, edit_line[static_cast<size_t>(issue->edit)], kEditKey, issue->message);
    for (size_t f = 0; f < table.size(); ++f) {
      if (table[f].key != issue->field) continue;
      if (field_line[f] != 0) fail_at(origin, field_line[f], issue->field, issue->message);
      throw InputError(fmt::format("{}: field '{}' (default {}): {}", origin, issue->field, table[f].print(r),
                                   issue->message));
    }
    throw InputError(fmt::format("{}: field '{}': {}", origin, issue->field, issue->message));
  }
  const int64_t bytes = estimate_case_bytes(r);
  if (bytes > max_case_bytes)
    throw InputError(fmt::format("{}: the case needs {} but the limit is {}; raise it with --max-case-bytes",
                                 origin, format_byte_count(bytes), format_byte_count(max_case_bytes)));
  return r;
}

CaseRecipe parse_recipe_file(const std::string& path, int64_t max_case_bytes, bool verify_pinned) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw InputError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw InputError(fmt::format("{}: cannot stat: {}", path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) throw InputError(fmt::format("{}: not a regular file", path));
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) > kMaxRecipeTextBytes)
    throw InputError(fmt::format("{}: file is {} bytes, larger than the recipe limit of {}", path,
                                 static_cast<int64_t>(st.st_size), kMaxRecipeTextBytes));
  // Read at most one byte past the limit: a file that grew after fstat is still caught.
  std::string text(static_cast<size_t>(st.st_size) + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  CaseRecipe r = parse_recipe(text, path, max_case_bytes);
  // Files the recipe names are found relative to the recipe, and must still be the pinned bytes.
  resolve_file_paths(r.files, std::filesystem::path(path).parent_path().string());
  if (verify_pinned) verify_pinned_files(r.files, path);
  return r;
}

}  // namespace moefuzz
