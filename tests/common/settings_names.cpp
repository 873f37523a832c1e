// Compiled by the tests settings.names.* (tests/CMakeLists.txt), not linked: the accessors of
// common/settings.h compile for declared names of the right type, and, with SETTINGS_TRY set,
// do not compile for a name the table does not declare (1), a name of another type (2), or a
// default asked of a variable without one (3).
#include "common/settings.h"

namespace gtadoc {

bool declared_names() {
  return settings::flag("GTADOC_TOP_TO_ROOT") && settings::count_if_set("GTADOC_PREFETCH_DEPTH") &&
         settings::word("GTADOC_SHUFFLE") == "auto";
}

#if SETTINGS_TRY == 1
bool undeclared_name() { return settings::flag("GTADOC_TOP_TO_ROOTS"); }
#elif SETTINGS_TRY == 2
bool name_of_another_type() { return settings::flag_if_set("GTADOC_PREFETCH_DEPTH").has_value(); }
#elif SETTINGS_TRY == 3
uint64_t default_of_a_variable_without_one() { return settings::count("GTADOC_PREFETCH_DEPTH"); }
#endif

}  // namespace gtadoc
