// The replay runner: a target's LLVMFuzzerTestOneInput linked WITHOUT libFuzzer (normal release
// build), executable `<target>_replay`, registered with ctest under label `fuzz-replay`.
//
//   <target>_replay PATH...                 every regular file of each directory (or the file itself)
//                                           goes through LLVMFuzzerTestOneInput; any finding fails
//   moe_layer_fuzzer_replay ... --regressions DIR
//                                           every DIR/*.moefuzz is re-checked with the kernel its header
//                                           names: `# kernel: NAME` must still FAIL (with the signature
//                                           of `# kills: INVARIANT/STAGE` when given), and when NAME is a
//                                           mutant its correct twin `cpu` must PASS the same checks; a
//                                           file without `# kernel:` must pass on `cpu`.
// Exit: 0 all as expected, 1 a finding or a regression that no longer fails, 2 bad usage or input.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/errors.h"
#include "core/recipe_text.h"
#include "drivers/check_engine.h"
#include "drivers/finding_file.h"
#include "fuzz/finding.h"
#include "fuzz/target_kernel.h"
#include "kernels/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;
using namespace moefuzz;

int g_findings = 0;
std::string g_last_signature;

void record(const CaseRecipe&, const Verdict& v, const std::string&) {
  ++g_findings;
  g_last_signature = v.signature() + ": " + v.message;
}

std::vector<fs::path> files_in(const fs::path& p, const std::string& ext = "") {
  std::vector<fs::path> out;
  if (fs::is_regular_file(p)) return {p};
  if (!fs::is_directory(p)) throw InputError("no such file or directory: " + p.string());
  for (const auto& e : fs::directory_iterator(p))
    if (e.is_regular_file() && (ext.empty() || e.path().extension() == ext)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

int replay_corpus(const fs::path& dir) {
  int bad = 0, n = 0;
  for (const fs::path& f : files_in(dir)) {
    const std::string bytes = read_all(f);
    const int before = g_findings;
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ++n;
    if (g_findings != before) {
      ++bad;
      std::printf("FAIL %s: %s\n", f.string().c_str(), g_last_signature.c_str());
    }
  }
  std::printf("%s: %d inputs replayed, %d findings\n", dir.string().c_str(), n, bad);
  return bad;
}

// Check `kernel_name` on the recipe; returns the failed verdicts' signatures.
std::vector<std::string> failures(const std::string& kernel_name, CaseRecipe r,
                                  const std::string& invariants) {
  const auto kernel = make_kernel(kernel_name);
  r.profile = kernel->profile();
  if (const std::string why = kernel->supports(r); !why.empty())
    throw InputError("kernel " + kernel_name + " does not support the recipe: " + why);
  CheckOptions o;
  o.invariants = select_invariants(invariants);
  const CaseReport rep = check_case(*kernel, materialize(r), o);
  std::vector<std::string> sigs;
  for (const Verdict& v : rep.verdicts)
    if (v.failed()) sigs.push_back(v.signature());
  return sigs;
}

int replay_regressions(const fs::path& dir) {
  if (!fs::exists(dir)) {
    std::printf("%s: no regressions folder yet, skipped\n", dir.string().c_str());
    return 0;
  }
  int bad = 0, n = 0;
  for (const fs::path& f : files_in(dir, ".moefuzz")) {
    const std::string text = read_all(f);
    const CaseRecipe r = parse_recipe_file(f.string());
    const FindingHeader finding = read_finding_header(text);
    const std::string kernel = finding.kernel;
    const std::string kills = finding.kills;
    // The killing invariant alone when named (it may be an expensive one); else every cheap one.
    const std::string invariants = kills.empty() ? "all" : kills.substr(0, kills.find('/'));
    const auto t0 = std::chrono::steady_clock::now();
    std::string problem;
    if (kernel.empty()) {
      if (const auto s = failures("cpu", r, invariants); !s.empty()) problem = "cpu fails " + s.front();
    } else {
      const auto s = failures(kernel, r, invariants);
      if (s.empty())
        problem = kernel + " no longer fails";
      else if (!kills.empty() && std::find(s.begin(), s.end(), kills) == s.end())
        problem = kernel + " fails " + s.front() + " but not " + kills;
      if (problem.empty() && make_kernel(kernel)->is_mutant())
        if (const auto twin = failures("cpu", r, invariants); !twin.empty())
          problem = "correct twin cpu fails " + twin.front();
    }
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++n;
    if (!problem.empty()) ++bad;
    std::printf("%s %s (%s%s%s, %.2f s)%s%s\n", problem.empty() ? "ok  " : "FAIL",
                f.filename().string().c_str(), kernel.empty() ? "cpu" : kernel.c_str(),
                kills.empty() ? "" : " kills ", kills.c_str(), sec, problem.empty() ? "" : ": ",
                problem.c_str());
  }
  std::printf("%s: %d regressions replayed, %d not as expected\n", dir.string().c_str(), n, bad);
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> corpora, regressions;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--regressions" && i + 1 < argc)
      regressions.push_back(argv[++i]);
    else if (a == "-h" || a == "--help" || a.starts_with("-")) {
      std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE... [--regressions DIR]\n", argv[0]);
      return a.starts_with("-h") || a == "--help" ? 0 : 2;
    } else
      corpora.push_back(a);
  }
  if (corpora.empty() && regressions.empty()) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE... [--regressions DIR]\n", argv[0]);
    return 2;
  }
  fuzz::set_finding_handler(record);
  int bad = 0;
  try {
    for (const auto& c : corpora) bad += replay_corpus(c);
    for (const auto& d : regressions) bad += replay_regressions(d);
  } catch (const InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return bad == 0 ? 0 : 1;
}
