// Shared by the engine tests: every task variant a query can take, and a scoped environment
// variable (the GPU engine reads its memory limit from the environment).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

#include "worker/query.h"

namespace gtadoc::testutil {

struct TaskCase {
  Task task;
  bool per_doc = false;
};
/// The six tasks, sequence-count both global and per document.
inline constexpr TaskCase kTaskCases[] = {{Task::kWordCount},          {Task::kSort},
                                          {Task::kInvertedIndex},      {Task::kTermVector},
                                          {Task::kSequenceCount},      {Task::kSequenceCount, true},
                                          {Task::kRankedInvertedIndex}};

/// Sets an environment variable for the lifetime of the object, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace gtadoc::testutil
