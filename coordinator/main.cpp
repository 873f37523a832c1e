// gtadoc entry point: hands the command line to the CLI layer, which maps every error to a
// one-line message and an exit code.
#include "coordinator/cli.h"

int main(int argc, char** argv) {
  return gtadoc::cli_main(argc, argv);
}
