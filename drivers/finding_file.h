#pragma once
// The one file format of a finding, whoever writes or reads it: `moefuzz check` and campaigns
// (drivers/campaign.h save_finding), the shrinker (format_regression), fuzz targets
// (fuzz/finding.h), `moefuzz replay` / `shrink`, the fuzz campaign's harvest and the regression
// corpus (corpora/regressions/, replayed by ctest). A finding is a recipe (core/recipe_text.h) whose
// first line `MOEFUZZ v1` is followed by `# key: value` header lines; the recipe parser reads them as
// comments, so any finding replays as it is and can be dropped into corpora/regressions/.
//
//   MOEFUZZ v1
//   # kills: SCALE1/combine               the signature that fails (INVARIANT/STAGE)
//   # kernel: mutant/z1-rsf-twice         registry name, py:MODULE:ATTR, or an absolute plugin path
//   # message: output scales as rsf^2 ... the verdict's message on one line
//   # REPRO: moefuzz replay /abs/finding.moefuzz --kernel mutant/z1-rsf-twice
//   # before: ...                         further notes (the shrinker's sizes and time), in order
//   tokens = 1
//   ...
//
// Example:
//   FindingHeader h{.kills = v.signature(), .kernel = "cpu", .message = v.message, .repro = cmd};
//   write_file_atomically(path, finding_text(to_text(recipe), h));
//   const FindingHeader back = read_finding_header(read_text(path));  // back.kills == h.kills
#include <string>
#include <string_view>
#include <vector>

namespace moefuzz {

struct FindingHeader {
  std::string kills;    // INVARIANT/STAGE
  std::string kernel;   // as stored (drivers use kernels/kernel_name.h stored_kernel_name)
  std::string message;  // written on one line (control characters become spaces, at most 300 chars)
  std::string repro;    // the one-line command
  std::vector<std::string> notes;  // free `# ...` lines written after the fields above
};

// The recipe text with the header inserted after its first line. Empty fields are not written.
std::string finding_text(const std::string& recipe_text, const FindingHeader& header);

// The header of a finding (fields absent from the text stay empty; notes are not read back). Files
// written before `# kills:` was the check's field name carry `# moefuzz finding: SIG`: read as kills.
FindingHeader read_finding_header(const std::string& text);

// `s` on one line: control characters become spaces, cut at max_chars with "...".
std::string one_line(std::string s, size_t max_chars = 300);

}  // namespace moefuzz
