// Replays a fixed, seeded set of mutations of a real archive through the archive readers' fuzz
// target (archive_fuzz.h), without libFuzzer: what CTest's fuzz.archive_readers runs.
//
// The skeleton (five documents of data/sample in two shards) is made fresh with --fresh. For each
// of its files (the manifest, each shard) the cases are: the file unchanged; byte flips (1 to 4
// bytes, seeded); truncations; splices (a block of any skeleton file written over, or inserted
// into, the file); and, edited through HDF5 so that every checksum still holds, each dataset
// replaced by one claiming 2^16+1 to 2^62 elements (with no data stored, or with the original
// data in its first elements) and each integer root attribute set to extreme values. The same
// seed gives the same cases on every machine (std::mt19937_64, no distributions).
//
// Everything runs under a 1 GiB address-space limit (setrlimit; under AddressSanitizer a 1 GiB
// limit per allocation), so an allocation sized by a crafted header fails instead of taking the
// machine; a single operator new above 64 MiB is a failure too. A failure is printed with its case number; with --failures DIR each failing
// input is saved there as a file libFuzzer's archive_fuzz replays. Exit 1 if any case failed.
//
// Usage: archive_fuzz_replay [--fresh] [--seeds DIR] [--failures DIR] [--only N] [--list]
//                            [--verbose] SKELETON
// (--list: the cases; --verbose: each case's first InputError; --seeds: write the skeleton's
// files as libFuzzer inputs into DIR and exit.)
#include <hdf5.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "tests/formats/fuzz/archive_fuzz.h"

namespace fs = std::filesystem;

// Under AddressSanitizer (the GTADOC_FUZZ build), whose shadow memory takes far more address
// space than the limit, the allocator bounds each allocation instead of setrlimit.
#if defined(__SANITIZE_ADDRESS__)
#define GTADOC_REPLAY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GTADOC_REPLAY_ASAN 1
#endif
#endif
#ifdef GTADOC_REPLAY_ASAN
extern "C" const char* __asan_default_options() {
  return "max_allocation_size_mb=1024:allocator_may_return_null=1";
}
#endif

// ---------------------------------------------------------------- the largest single allocation
namespace {
std::atomic<size_t> g_largest{0};
}  // namespace

void* operator new(size_t n) {
  size_t seen = g_largest.load(std::memory_order_relaxed);
  while (n > seen && !g_largest.compare_exchange_weak(seen, n, std::memory_order_relaxed)) {
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}

namespace {

constexpr uint64_t kAddressSpace = uint64_t{1} << 30;
constexpr size_t kLargestAllocation = size_t{64} << 20;
constexpr uint64_t kSeed = 0x67746164'6f632d66ULL;

struct Case {
  std::string name;
  std::string input;  ///< selector byte + file bytes
};

std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) throw std::runtime_error(file.string() + ": cannot write");
}

Case make_case(size_t target, std::string name, const std::string& bytes) {
  Case c{gtadoc::fuzz::targets()[target] + ": " + name, std::string(1, static_cast<char>(target))};
  c.input += bytes;
  return c;
}

// ---------------------------------------------------------------- edits through HDF5
// Each edit copies the file to `scratch`, changes it with HDF5's C API (checksums recomputed)
// and returns the new bytes; an edit HDF5 itself refuses gives no case.

/// A file access list of the archive's HDF5 format (docs/FORMAT.md).
hid_t archive_fapl() {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110);
  return fapl;
}

/// The paths of every dataset of `file`.
std::vector<std::string> datasets(const fs::path& file) {
  std::vector<std::string> names;
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return names;
  auto visit = [](hid_t group, const char* name, const H5L_info_t*, void* data) -> herr_t {
    hid_t o = H5Oopen(group, name, H5P_DEFAULT);
    if (o >= 0 && H5Iget_type(o) == H5I_DATASET)
      static_cast<std::vector<std::string>*>(data)->push_back(std::string("/") + name);
    if (o >= 0) H5Oclose(o);
    return 0;
  };
  H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC, visit, &names);
  H5Fclose(f);
  return names;
}

/// Dataset `name` of `file` replaced by one of the same type and filters claiming `n` elements;
/// with `keep_data`, its original elements written at the start.
bool claim_elements(const fs::path& file, const std::string& name, hsize_t n, bool keep_data) {
  hid_t fapl = archive_fapl();
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, fapl);
  H5Pclose(fapl);
  if (f < 0) return false;
  bool ok = false;
  hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  if (d >= 0) {
    hid_t type = H5Dget_type(d);
    hid_t dcpl = H5Dget_create_plist(d);
    hid_t space = H5Dget_space(d);
    hsize_t old_n = 0;
    H5Sget_simple_extent_dims(space, &old_n, nullptr);
    H5Sclose(space);
    std::vector<unsigned char> data(old_n * H5Tget_size(type));
    const bool read =
        !keep_data || old_n == 0 ||
        H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) >= 0;
    H5Dclose(d);
    hsize_t chunk = 1;
    H5Pget_chunk(dcpl, 1, &chunk);
    if (read && chunk <= n && H5Ldelete(f, name.c_str(), H5P_DEFAULT) >= 0) {
      // With its data the claim grows an unlimited dataset (an extensible chunk index: HDF5
      // would allocate a fixed index for every chunk claimed).
      const hsize_t max = keep_data ? H5S_UNLIMITED : n;
      hid_t claimed = H5Screate_simple(1, &n, &max);
      hid_t created = H5Dcreate2(f, name.c_str(), type, claimed, H5P_DEFAULT, dcpl, H5P_DEFAULT);
      ok = created >= 0;
      if (ok && keep_data && old_n > 0) {
        const hsize_t start = 0, count = std::min<hsize_t>(old_n, n);
        hid_t mem = H5Screate_simple(1, &count, nullptr);
        H5Sselect_hyperslab(claimed, H5S_SELECT_SET, &start, nullptr, &count, nullptr);
        ok = H5Dwrite(created, type, mem, claimed, H5P_DEFAULT, data.data()) >= 0;
        H5Sclose(mem);
      }
      if (created >= 0) H5Dclose(created);
      H5Sclose(claimed);
    }
    H5Pclose(dcpl);
    H5Tclose(type);
  }
  return H5Fclose(f) >= 0 && ok;
}

/// The integer root attributes of `file`.
std::vector<std::string> integer_attributes(const fs::path& file) {
  std::vector<std::string> names;
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return names;
  auto visit = [](hid_t loc, const char* name, const H5A_info_t*, void* data) -> herr_t {
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    hid_t t = a >= 0 ? H5Aget_type(a) : H5I_INVALID_HID;
    if (t >= 0 && H5Tget_class(t) == H5T_INTEGER)
      static_cast<std::vector<std::string>*>(data)->push_back(name);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return 0;
  };
  H5Aiterate2(f, H5_INDEX_NAME, H5_ITER_INC, nullptr, visit, &names);
  H5Fclose(f);
  return names;
}

/// Root attribute `name` of `file` set to `value` (converted to its stored width, saturating).
bool set_attribute(const fs::path& file, const std::string& name, uint64_t value) {
  hid_t fapl = archive_fapl();
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, fapl);
  H5Pclose(fapl);
  if (f < 0) return false;
  hid_t a = H5Aopen(f, name.c_str(), H5P_DEFAULT);
  const bool ok = a >= 0 && H5Awrite(a, H5T_NATIVE_UINT64, &value) >= 0;
  if (a >= 0) H5Aclose(a);
  return H5Fclose(f) >= 0 && ok;
}

// ---------------------------------------------------------------- the cases
std::vector<Case> build_cases(const fs::path& scratch) {
  using gtadoc::fuzz::original;
  using gtadoc::fuzz::targets;
  std::vector<Case> cases;
  std::mt19937_64 rng(kSeed);
  auto below = [&](uint64_t n) { return n == 0 ? 0 : rng() % n; };
  const size_t files = targets().size();
  for (size_t t = 0; t < files; ++t) {
    const std::string& bytes = original(t);
    const uint64_t size = bytes.size();
    cases.push_back(make_case(t, "unchanged", bytes));
    for (int k = 0; k < 600; ++k) {
      std::string b = bytes;
      const int flips = 1 + static_cast<int>(below(4));
      std::string name = "flip";
      for (int j = 0; j < flips; ++j) {
        const uint64_t at = below(size);
        const auto mask = static_cast<unsigned char>(1 + below(255));
        b[at] = static_cast<char>(static_cast<unsigned char>(b[at]) ^ mask);
        name += " " + std::to_string(at) + "^" + std::to_string(mask);
      }
      cases.push_back(make_case(t, name, b));
    }
    std::vector<uint64_t> lengths{0, 1, 8, 47, 48, 96, 512, size / 4, size / 2, size * 3 / 4,
                                  size - 1};
    for (int k = 0; k < 30; ++k) lengths.push_back(below(size));
    for (uint64_t n : lengths)
      cases.push_back(make_case(t, "truncated to " + std::to_string(n), bytes.substr(0, n)));
    for (int k = 0; k < 200; ++k) {
      const size_t from = below(files);
      const std::string& src = original(from);
      const uint64_t len = 1 + below(512);
      const uint64_t at = below(src.size() - std::min<uint64_t>(len, src.size()) + 1);
      const std::string block = src.substr(at, len);
      const uint64_t to = below(size + 1);
      const bool insert = below(2) == 0;
      std::string b = bytes;
      if (insert)
        b.insert(to, block);
      else
        b.replace(to, std::min<uint64_t>(block.size(), size - to), block);
      cases.push_back(make_case(t,
                                std::string(insert ? "inserted " : "overwritten ") +
                                    std::to_string(block.size()) + " bytes of " + targets()[from] +
                                    "@" + std::to_string(at) + " at " + std::to_string(to),
                                b));
    }
    const fs::path copy = scratch / targets()[t];
    write_bytes(copy, bytes);
    for (const std::string& ds : datasets(copy))
      for (int e : {17, 28, 31, 33, 40, 62}) {
        const hsize_t n = e == 17 ? (hsize_t{1} << 16) + 1 : hsize_t{1} << e;
        for (bool keep : {false, true}) {
          write_bytes(copy, bytes);
          if (claim_elements(copy, ds, n, keep))
            cases.push_back(make_case(t,
                                      ds + " claims " + std::to_string(n) + " elements" +
                                          (keep ? " (its data stored)" : " (nothing stored)"),
                                      read_bytes(copy)));
        }
      }
    for (const std::string& attr : integer_attributes(copy))
      for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 31, (uint64_t{1} << 32) - 1,
                         uint64_t{1} << 63, ~uint64_t{0}}) {
        write_bytes(copy, bytes);
        if (set_attribute(copy, attr, v))
          cases.push_back(
              make_case(t, "attribute " + attr + " = " + std::to_string(v), read_bytes(copy)));
      }
    fs::remove(copy);
  }
  return cases;
}

// ---------------------------------------------------------------- a crash names its case
volatile sig_atomic_t g_case = -1;

void on_crash(int sig) {
  char line[96];
  const int n = std::snprintf(line, sizeof line,
                              "archive fuzz replay: case %d crashed (signal %d); rerun with --only "
                              "%d\n",
                              static_cast<int>(g_case), sig, static_cast<int>(g_case));
  if (n > 0) (void)!::write(2, line, static_cast<size_t>(n));
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

int usage() {
  std::fprintf(stderr,
               "usage: archive_fuzz_replay [--fresh] [--seeds DIR] [--failures DIR] [--only N] "
               "[--list] [--verbose] SKELETON\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool fresh = false, list = false, verbose = false;
  long only = -1;
  fs::path seeds, failures, skeleton;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--fresh") fresh = true;
    else if (a == "--list") list = true;
    else if (a == "--verbose") verbose = true;
    else if (a == "--seeds" && i + 1 < argc) seeds = argv[++i];
    else if (a == "--failures" && i + 1 < argc) failures = argv[++i];
    else if (a == "--only" && i + 1 < argc) only = std::strtol(argv[++i], nullptr, 10);
    else if (!a.empty() && a[0] != '-' && skeleton.empty()) skeleton = a;
    else return usage();
  }
  if (skeleton.empty()) return usage();
  const auto start = std::chrono::steady_clock::now();
  std::vector<Case> cases;
  try {
    gtadoc::fuzz::make_skeleton(skeleton, fresh);
    gtadoc::fuzz::use_skeleton(skeleton);
    if (!seeds.empty()) {  // libFuzzer's starting corpus: each file of the skeleton as an input
      fs::create_directories(seeds);
      for (size_t t = 0; t < gtadoc::fuzz::targets().size(); ++t)
        write_bytes(seeds / ("seed-" + gtadoc::fuzz::targets()[t]),
                    std::string(1, static_cast<char>(t)) + gtadoc::fuzz::original(t));
      return 0;
    }
    const fs::path scratch = fs::temp_directory_path() / ("archive-fuzz-edits-" +
                                                          std::to_string(::getpid()));
    fs::create_directories(scratch);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    cases = build_cases(scratch);
    fs::remove_all(scratch);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "archive fuzz replay: %s\n", e.what());
    return 1;
  }
  if (list) {
    for (size_t k = 0; k < cases.size(); ++k) std::printf("%zu %s\n", k, cases[k].name.c_str());
    return 0;
  }
  if (!failures.empty()) {
    std::error_code ec;
    fs::remove_all(failures, ec);  // only this run's failures
    fs::create_directories(failures);
  }

  // From here on an allocation sized by a crafted header fails instead of taking the machine.
#if defined(__GLIBC__)
  mallopt(M_ARENA_MAX, 2);  // per-thread malloc arenas reserve address space of their own
#endif
#ifndef GTADOC_REPLAY_ASAN
  const rlimit rl{kAddressSpace, kAddressSpace};
  if (::setrlimit(RLIMIT_AS, &rl) != 0) {
    std::perror("archive fuzz replay: setrlimit");
    return 1;
  }
#endif
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, on_crash);

  size_t ran = 0, input_errors = 0, failed = 0, largest = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    if (only >= 0 && static_cast<size_t>(only) != k) continue;
    const Case& c = cases[k];
    g_case = static_cast<sig_atomic_t>(k);
    g_largest.store(0);
    const auto* data = reinterpret_cast<const uint8_t*>(c.input.data());
    gtadoc::fuzz::Outcome o = gtadoc::fuzz::run_one(data, c.input.size());
    largest = std::max(largest, g_largest.load());
    if (verbose)
      std::printf("%zu %s: %s\n", k, c.name.c_str(),
                  o.first_error.empty() ? "read" : o.first_error.c_str());
    if (g_largest.load() > kLargestAllocation)
      o.failures.push_back("an allocation of " + std::to_string(g_largest.load()) +
                           " bytes at once");
    ++ran;
    input_errors += o.input_errors;
    if (o.failures.empty()) continue;
    ++failed;
    for (const std::string& f : o.failures)
      std::fprintf(stderr, "FAIL case %zu (%s): %s\n", k, c.name.c_str(), f.c_str());
    if (!failures.empty()) write_bytes(failures / ("case-" + std::to_string(k)), c.input);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "archive fuzz replay: %zu cases, %zu reader errors (InputError), largest allocation %zu "
      "bytes, %zu failed, %.1fs\n",
      ran, input_errors, largest, failed, seconds);
  return failed == 0 ? 0 : 1;
}
