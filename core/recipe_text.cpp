#include "core/recipe_text.h"
#include "core/errors.h"
namespace moefuzz {
std::string to_text(const CaseRecipe&) { return std::string(kRecipeMagic) + "\n"; }
CaseRecipe parse_recipe(std::string_view, const std::string& origin, int64_t) { throw InputError(origin + ": parser not implemented yet"); }
CaseRecipe parse_recipe_file(const std::string& path, int64_t m) { return parse_recipe("", path, m); }
}  // namespace moefuzz
