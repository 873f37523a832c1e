// The settings registry (common/settings.h) against the source tree: docs/ENVIRONMENT.md's tables
// list exactly its variables, each in its category, and exactly the names read elsewhere; and no
// source file of gtadoc reads a GTADOC_* variable with getenv but common/settings.cpp.
#include "common/settings.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace gtadoc {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The `GTADOC_...` names quoted in `text` (a name ending in '_' where a placeholder follows:
/// `GTADOC_PKG_<NAME>`).
std::set<std::string> quoted_names(const std::string& text) {
  static const std::regex name("`(GTADOC_[A-Z0-9_]*)");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator();
       ++it)
    out.insert((*it)[1]);
  return out;
}

struct Documented {
  std::map<std::string, std::string> category;  ///< the variables of the four tables
  std::set<std::string> elsewhere;              ///< the names read by tests, tools and scripts
};

/// ENVIRONMENT.md: rows of the tables under "Operator settings", "Tuning", "Debug" and "Test
/// hooks" (the first cell names the variable); the "Read by tests and tools" paragraph and the
/// first cells of the "Scripts" table.
Documented read_environment_md(const fs::path& file) {
  const std::map<std::string, std::string> sections = {{"Operator settings", "operator"},
                                                       {"Tuning", "tuning"},
                                                       {"Debug", "debug"},
                                                       {"Test hooks", "test"},
                                                       {"Scripts", "elsewhere"}};
  Documented d;
  std::ifstream in(file);
  std::string line, section;
  bool in_paragraph = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      const auto it = sections.find(line.substr(3));
      section = it == sections.end() ? "" : it->second;
      in_paragraph = false;
      continue;
    }
    if (line.rfind("Read by tests and tools", 0) == 0) in_paragraph = true;
    if (line.empty()) in_paragraph = false;
    if (in_paragraph) {
      for (const std::string& n : quoted_names(line)) d.elsewhere.insert(n);
      continue;
    }
    if (section.empty() || line.rfind("| `", 0) != 0) continue;
    const std::string first_cell = line.substr(1, line.find('|', 1) - 1);
    for (const std::string& n : quoted_names(first_cell)) {
      if (section == "elsewhere") {
        d.elsewhere.insert(n);
      } else {
        EXPECT_TRUE(d.category.emplace(n, section).second) << n << " documented twice";
      }
    }
  }
  return d;
}

TEST(SettingsDocs, EnvironmentMdListsTheRegistry) {
  const fs::path doc = fs::path(GTADOC_SOURCE_DIR) / "docs" / "ENVIRONMENT.md";
  ASSERT_TRUE(fs::exists(doc)) << doc;
  const Documented d = read_environment_md(doc);
  std::map<std::string, std::string> registry;
  for (const settings::Variable& v : settings::kVariables)
    registry.emplace(v.name, settings::category_name(v.category));
  for (const auto& [name, category] : registry) {
    const auto it = d.category.find(name);
    if (it == d.category.end())
      ADD_FAILURE() << name << " (" << category << ") is not in docs/ENVIRONMENT.md's tables";
    else
      EXPECT_EQ(it->second, category) << name << ": its docs section differs from the registry";
  }
  for (const auto& [name, category] : d.category)
    EXPECT_TRUE(registry.count(name))
        << name << " is documented (" << category << ") but not in common/settings.h";
  const std::set<std::string> elsewhere(std::begin(settings::kReadElsewhere),
                                        std::end(settings::kReadElsewhere));
  EXPECT_EQ(d.elsewhere, elsewhere)
      << "the names docs/ENVIRONMENT.md says tests, tools and scripts read differ from "
         "settings::kReadElsewhere";
}

TEST(SettingsDocs, OnlyTheRegistryReadsGtadocVariables) {
  const fs::path root(GTADOC_SOURCE_DIR);
  const std::set<std::string> extensions = {".cpp", ".h", ".cu", ".cuh"};
  std::set<std::string> readers;
  for (const char* dir : {"common", "coordinator", "cluster", "worker", "formats"}) {
    ASSERT_TRUE(fs::is_directory(root / dir)) << root / dir;
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(root / dir)) {
      if (!e.is_regular_file() || !extensions.count(e.path().extension().string())) continue;
      if (read_text(e.path()).find("getenv(\"GTADOC_") != std::string::npos)
        readers.insert(fs::relative(e.path(), root).generic_string());
    }
  }
  for (const std::string& file : readers)
    EXPECT_EQ(file, "common/settings.cpp")
        << file << " reads a GTADOC_* variable with getenv: declare it in common/settings.h and "
        << "read it with the settings accessors";
}

}  // namespace
}  // namespace gtadoc
