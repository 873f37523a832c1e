// The command-line interface (SPEC §2): parses `gtadoc <command> ...`, dispatches, and turns
// exceptions into one-line messages on stderr with exit codes (2 for usage errors).
#pragma once

namespace gtadoc {
int cli_main(int argc, char** argv);
}
