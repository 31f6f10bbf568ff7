#include "drivers/finding_file.h"

#include <sstream>

namespace moefuzz {
namespace {

constexpr std::string_view kKills = "# kills:", kLegacyKills = "# moefuzz finding:", kKernel = "# kernel:",
                           kMessage = "# message:", kRepro = "# REPRO:";

std::string trimmed(std::string v) {
  v.erase(0, v.find_first_not_of(" \t"));
  v.erase(v.find_last_not_of(" \t\r") + 1);
  return v;
}

}  // namespace

std::string one_line(std::string s, size_t max_chars) {
  for (char& ch : s)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = ' ';
  if (s.size() > max_chars) s = s.substr(0, max_chars) + "...";
  return s;
}

std::string finding_text(const std::string& recipe_text, const FindingHeader& h) {
  std::string header;
  auto field = [&](std::string_view tag, const std::string& value) {
    if (!value.empty()) header += std::string(tag) + " " + one_line(value, 4096) + "\n";
  };
  field(kKills, h.kills);
  field(kKernel, h.kernel);
  if (!h.message.empty()) header += std::string(kMessage) + " " + one_line(h.message) + "\n";
  field(kRepro, h.repro);
  for (const std::string& note : h.notes) header += "# " + one_line(note, 4096) + "\n";
  std::string text = recipe_text;
  const size_t eol = text.find('\n');
  text.insert(eol == std::string::npos ? text.size() : eol + 1, header);
  return text;
}

FindingHeader read_finding_header(const std::string& text) {
  FindingHeader h;
  std::istringstream in(text);
  std::string line;
  auto take = [&](std::string_view tag, std::string& into) {
    if (line.rfind(tag, 0) != 0 || !into.empty()) return false;
    into = trimmed(line.substr(tag.size()));
    return true;
  };
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '#') continue;
    take(kKills, h.kills) || take(kLegacyKills, h.kills) || take(kKernel, h.kernel) ||
        take(kMessage, h.message) || take(kRepro, h.repro);
  }
  return h;
}

}  // namespace moefuzz
