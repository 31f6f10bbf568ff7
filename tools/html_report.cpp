#include "tools/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/file_text.h"
#include "core/recipe_text.h"
#include "drivers/finding_file.h"
#include "drivers/run_coverage.h"

namespace moefuzz::cli {
namespace {

namespace fs = std::filesystem;

struct FindingEntry {
  std::string file;  // path of the recipe
  std::string signature, kernel, message, repro, report;
  int64_t occurrences = 0;  // 0 = not known (an earlier run into the same directory, a campaign)
};

// A saved finding (drivers/finding_file.h), with the failure report beside it when there is one.
FindingEntry read_finding(const fs::path& recipe) {
  FindingEntry f;
  f.file = fs::absolute(recipe).lexically_normal().string();
  const FindingHeader h = read_finding_header(file_text(recipe));
  f.signature = h.kills;
  f.kernel = h.kernel;
  f.message = h.message;
  f.repro = h.repro;
  fs::path report = recipe;
  report.replace_extension(".txt");
  std::error_code ec;
  if (fs::is_regular_file(report, ec)) f.report = file_text(report);
  return f;
}

std::vector<fs::path> recipes_in(const fs::path& dir, std::string_view prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && e.path().extension() == ".moefuzz" && name.rfind(prefix, 0) == 0)
      out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What follows "; residual: " in a message (core/elementwise_compare.h), "" when absent.
std::string residual_of(const std::string& message) {
  constexpr std::string_view kTag = "; residual: ";
  const size_t at = message.find(kTag);
  return at == std::string::npos ? "" : message.substr(at + kTag.size());
}

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t n = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    for (int s : {18, 12, 6, 0}) out += kAlphabet[(n >> s) & 63];
  }
  if (i < bytes.size()) {
    uint32_t n = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// A JSON value as text for a table cell (strings without their quotes).
std::string cell(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fmt::format("{:.4g}", v.get<double>());
  return v.dump();
}

std::string table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows,
                  const std::string& id) {
  std::string out = fmt::format("<table id=\"{}\"><thead><tr>", html_escape(id));
  for (const auto& h : head) out += "<th>" + html_escape(h) + "</th>";
  out += "</tr></thead><tbody>\n";
  for (const auto& r : rows) {
    out += "<tr>";
    for (const auto& c : r) out += "<td>" + html_escape(c) + "</td>";
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

std::string reached_section(const nlohmann::json& reached, const std::string& of_what) {
  static const std::pair<const char*, const char*> kCategories[] = {{"routing", "Routing modes"},
                                                                    {"profiles", "Profiles"},
                                                                    {"shape_classes", "Shape classes"},
                                                                    {"hostile_corners", "Hostile corners"}};
  std::string out = "<h2>What the run reached</h2>\n<p>" + html_escape(of_what) + "</p>\n";
  for (const auto& [key, title] : kCategories) {
    std::vector<std::vector<std::string>> rows;
    if (reached.contains(key) && reached[key].is_object())
      for (const auto& [name, count] : reached[key].items()) rows.push_back({name, cell(count)});
    out += fmt::format("<h3>{}</h3>\n", title);
    out += rows.empty() ? "<p>none</p>\n" : table({"", "cases"}, rows, std::string("reached-") + key);
  }
  return out;
}

std::string findings_section(const std::vector<FindingEntry>& findings) {
  std::string out = fmt::format("<h2>Findings ({})</h2>\n", findings.size());
  if (findings.empty()) return out + "<p class=\"ok\">no findings</p>\n";
  for (const auto& f : findings) {
    out += "<section class=\"finding\">\n";
    out += fmt::format("<h3 class=\"signature\">{}</h3>\n", html_escape(f.signature));
    out += "<dl>";
    out += "<dt>kernel</dt><dd class=\"kernel\">" + html_escape(f.kernel) + "</dd>";
    if (f.occurrences > 0) out += fmt::format("<dt>cases</dt><dd>{}</dd>", f.occurrences);
    out += "<dt>message</dt><dd class=\"message\">" + html_escape(f.message) + "</dd>";
    const std::string residual = residual_of(f.message);
    out += "<dt>residual pattern</dt><dd class=\"residual\">" +
           html_escape(residual.empty() ? "none (not an elementwise comparison)" : residual) + "</dd>";
    out += "<dt>recipe</dt><dd><code>" + html_escape(f.file) + "</code></dd>";
    out += "</dl>\n<pre class=\"repro\">REPRO: " + html_escape(f.repro) + "</pre>\n";
    if (!f.report.empty())
      out += "<details><summary>failure report</summary><pre>" + html_escape(f.report) + "</pre></details>\n";
    out += "</section>\n";
  }
  return out;
}

constexpr const char* kStyle = R"(body{font-family:system-ui,sans-serif;margin:2em;max-width:72em;color:#222}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #bbb;padding:.2em .6em;text-align:right}
td:first-child,th:first-child{text-align:left}.ok{color:#060}
.finding{border-left:4px solid #c00;padding:.2em 1em;margin:1em 0;background:#fafafa}
pre{white-space:pre-wrap;word-break:break-all;background:#f0f0f0;padding:.5em}dt{font-weight:bold}
dd{margin:0 0 .4em 1em}img{max-width:100%})";

}  // namespace

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string render_report_page(const std::string& dir_arg) {
  std::error_code ec;
  const fs::path dir = fs::absolute(dir_arg, ec).lexically_normal();
  if (ec || !fs::is_directory(dir, ec))
    throw InputError(fmt::format("report: '{}' is not a directory", dir_arg));
  nlohmann::json summary;
  const fs::path summary_path = dir / "summary.json";
  if (fs::is_regular_file(summary_path, ec)) {
    summary = nlohmann::json::parse(file_text(summary_path), nullptr, /*allow_exceptions=*/false);
    if (summary.is_discarded() || !summary.is_object())
      throw InputError(fmt::format("report: {} is not valid JSON", summary_path.string()));
  }
  const bool campaign = summary.contains("target");
  std::vector<FindingEntry> findings;
  for (const auto& p : recipes_in(dir, "finding-")) findings.push_back(read_finding(p));
  for (const auto& p : recipes_in(dir / "findings", "")) findings.push_back(read_finding(p));
  const bool drift = fs::is_regular_file(dir / "drift.svg", ec);
  if (summary.is_null() && findings.empty() && !drift)
    throw InputError(fmt::format(
        "report: '{}' holds no moefuzz output (summary.json, finding-*.moefuzz, findings/ or drift.svg): "
        "pass the --out directory of a check, campaign or drift run",
        dir_arg));
  // Cases per signature, as the summary counted them (a finding of an earlier run into the same
  // directory has none).
  if (summary.contains("findings") && summary["findings"].is_array())
    for (const auto& jf : summary["findings"])
      for (auto& f : findings)
        if (jf.value("recipe", "") == f.file || jf.value("path", "") == f.file) {
          f.occurrences = jf.value("occurrences", int64_t{0});
          // The summary keeps the whole message; a finding file's header is cut to one short line.
          f.message = jf.value("message", f.message);
        }

  std::string body;
  const std::string fallback_kernel = findings.empty() ? "" : findings.front().kernel;
  const std::string kernel = summary.is_object() ? summary.value("kernel", fallback_kernel) : fallback_kernel;
  body += fmt::format("<h1>moefuzz report: {}</h1>\n<p>directory <code>{}</code></p>\n", html_escape(kernel),
                      html_escape(dir.string()));
  if (campaign) {
    std::vector<std::vector<std::string>> rows;
    for (const char* k : {"target", "kernel", "seconds", "processes", "jobs", "execs", "execs_per_second",
                          "coverage", "features", "corpus", "crashes", "semantic"})
      if (summary.contains(k)) rows.push_back({k, cell(summary[k])});
    body += "<h2>Campaign</h2>\n" + table({"", "value"}, rows, "campaign");
  } else if (!summary.is_null()) {
    body += fmt::format(
        "<p>profile {}, shapes {}, seed {}: {} cases in {:.1f} s ({} drawn recipes outside the kernel's "
        "domain)</p>\n",
        html_escape(cell(summary.value("profile", nlohmann::json("")))),
        html_escape(cell(summary.value("shapes", nlohmann::json("")))),
        html_escape(cell(summary.value("seed", nlohmann::json(0)))), summary.value("cases", int64_t{0}),
        summary.value("seconds", 0.0), summary.value("unsupported", int64_t{0}));
    std::vector<std::vector<std::string>> rows;
    if (summary.contains("invariants") && summary["invariants"].is_object())
      for (const auto& [code, t] : summary["invariants"].items())
        rows.push_back({code, cell(t.value("pass", nlohmann::json(0))),
                        cell(t.value("fail", nlohmann::json(0))), cell(t.value("skip", nlohmann::json(0))),
                        cell(t.value("vacuous", nlohmann::json(0))),
                        cell(t.value("not_evaluated", nlohmann::json(0))),
                        cell(t.value("max_ratio", nlohmann::json(0.0)))});
    body += "<h2>Summary</h2>\n" +
            table({"invariant", "pass", "fail", "skip", "vacuous", "not evaluated", "max error/bound"}, rows,
                  "summary");
  }
  body += findings_section(findings);
  if (summary.contains("reached")) {
    body += reached_section(summary["reached"], fmt::format("Checked cases per category ({} cases).",
                                                            summary.value("cases", int64_t{0})));
  } else if (campaign || !findings.empty()) {
    // A campaign's corpus is libFuzzer bytes: what the saved recipes (raw/ and findings/) reached is
    // what a recipe-level view can show; libFuzzer's semantic buckets are in the table above.
    RunCoverage reached;
    int64_t recipes = 0;
    std::vector<fs::path> saved = recipes_in(dir / "raw", "");
    for (const auto& f : findings) saved.push_back(f.file);
    for (const auto& p : saved) {
      try {
        note_case(reached, parse_recipe_file(p.string(), std::numeric_limits<int64_t>::max()));
        ++recipes;
      } catch (const InputError&) {  // not a recipe moefuzz can read: left out of the counts
      }
    }
    body += reached_section(coverage_json(reached),
                            fmt::format("Saved recipes per category ({} recipes).", recipes));
  }
  if (drift) {
    body += "<h2>Drift</h2>\n<img alt=\"drift plot\" src=\"data:image/svg+xml;base64," +
            base64(file_text(dir / "drift.svg")) + "\">\n";
  }
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>moefuzz report: " +
         html_escape(kernel) + "</title>\n<style>" + kStyle + "</style></head>\n<body>\n" + body +
         "</body></html>\n";
}

}  // namespace moefuzz::cli
