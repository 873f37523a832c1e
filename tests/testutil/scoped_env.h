// A scoped environment variable for tests: set (or unset) for the object's lifetime, then
// restored. The settings registry (common/settings.h) reads the environment again at both ends,
// so the code under test sees the value.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

#include "common/settings.h"

namespace gtadoc::testutil {

class ScopedEnv {
 public:
  /// `value` nullopt: unset for the lifetime.
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
    settings::reread_for_tests();
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
    settings::reread_for_tests();
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace gtadoc::testutil
