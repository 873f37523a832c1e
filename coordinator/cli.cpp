#include "coordinator/cli.h"

#include <cstdio>

namespace gtadoc {
int cli_main(int, char**) {
  std::fprintf(stderr, "gtadoc: under construction\n");
  return 70;
}
}  // namespace gtadoc
