#include "core/recipe.h"
namespace moefuzz {
std::string validate(const CaseRecipe&) { return ""; }
int64_t estimate_case_bytes(const CaseRecipe&) { return 0; }
}  // namespace moefuzz
