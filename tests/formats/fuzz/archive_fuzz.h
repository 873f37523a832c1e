// The fuzz target for the archive readers (archive_fuzz.cpp), as the replay driver
// (archive_fuzz_replay.cpp) and the libFuzzer entry point share it.
//
// An input is one file of a small valid archive, the skeleton: its first byte selects which
// (targets(): the manifest, then each shard), the rest is the file's new content. run_one writes
// it into a private copy of the skeleton and runs every reader on the copy: the manifest read
// (whole and with the dictionary deferred), archive_directory_problem, read_shard_grammar,
// read_shard_layout and check_shard_documents (against the manifest as stored and, for a shard,
// also against one that does not pin the file's size, so that inputs of any length reach the
// datasets), and verify_archive. The guarantee checked: every reader either succeeds or throws
// InputError (one line); nothing else is thrown, and verify passes a shard only if it is the
// skeleton's own bytes. The copy is restored before run_one returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gtadoc::fuzz {

/// Compresses a few documents of the bundled sample (data/sample) into a two-shard archive at
/// `archive` with the gtadoc binary (GTADOC_BINARY in the environment, else the one built with
/// the tests), unless `archive` already holds a manifest and `fresh` is false (then it is kept:
/// a saved corpus stays valid only against the skeleton it was made from). Throws
/// std::runtime_error when the binary fails.
void make_skeleton(const std::filesystem::path& archive, bool fresh);

/// Makes `archive` the skeleton: copies it into a private temporary directory (removed at
/// exit) and reads its manifest. Throws std::runtime_error when it is not a sound archive.
void use_skeleton(const std::filesystem::path& archive);

/// The skeleton's file names in the order the first input byte selects them (modulo their
/// count): "manifest.h5", then "shard-00000.h5", ...
const std::vector<std::string>& targets();
/// The skeleton's bytes of targets()[i].
const std::string& original(size_t i);

/// What one input did: the readers' InputErrors, and every broken guarantee (empty when none).
struct Outcome {
  size_t input_errors = 0;
  std::string first_error;  ///< the first InputError's message
  std::vector<std::string> failures;
};

/// Runs the readers on one input (see above). use_skeleton must have been called.
Outcome run_one(const uint8_t* data, size_t size);

}  // namespace gtadoc::fuzz
