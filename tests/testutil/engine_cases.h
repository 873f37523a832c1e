// Shared by the engine tests: every task variant a query can take, and a scoped environment
// variable (testutil/scoped_env.h: the GPU engine reads its memory limits from the environment).
#pragma once

#include "tests/testutil/scoped_env.h"
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

}  // namespace gtadoc::testutil
