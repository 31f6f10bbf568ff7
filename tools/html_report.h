#pragma once
// The page behind `moefuzz report DIR`: one self-contained HTML file (inline CSS, the drift plot as
// an inline data: image, no script and nothing fetched) for the output directory of a check
// (summary.json, finding-NNN-*.moefuzz and .txt), a libFuzzer campaign (summary.json, findings/,
// raw/) or a drift run (drift.svg). It shows the summary table, each finding with its residual
// pattern and REPRO line, what the run reached (routing modes, profiles, shape classes, hostile
// corners) and the drift plot. Every text from the directory is HTML-escaped: a kernel's message
// is data, never markup. docs/report.md describes the page.
//
// Example:
//   std::string page = moefuzz::cli::render_report_page("/tmp/moefuzz/cpu-seed7");
//   moefuzz::write_output("/tmp/moefuzz/cpu-seed7/report.html", page);
#include <string>

namespace moefuzz::cli {

// Throws InputError (exit 2) when `dir` is not a directory, holds none of the outputs above, or its
// summary.json is not valid JSON.
std::string render_report_page(const std::string& dir);

// `text` with & < > " ' as character references: safe in element content and quoted attributes.
std::string html_escape(const std::string& text);

}  // namespace moefuzz::cli
