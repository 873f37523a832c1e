// The archive readers' fuzz target (archive_fuzz.h): run_one, the skeleton it works on, and
// LLVMFuzzerTestOneInput / LLVMFuzzerInitialize for libFuzzer (a broken guarantee aborts there;
// the replay driver counts it instead).
#include "tests/formats/fuzz/archive_fuzz.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <new>
#include <stdexcept>
#include <string_view>

#include "common/error.h"
#include "coordinator/verify.h"
#include "formats/archive.h"

namespace gtadoc::fuzz {
namespace fs = std::filesystem;

namespace {

std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& file, std::string_view bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) throw std::runtime_error(file.string() + ": cannot write");
}

/// The private copy the readers run on, and what it holds when unchanged.
struct Skeleton {
  fs::path dir;
  Manifest manifest;
  std::vector<std::string> names;
  std::vector<std::string> bytes;
  ~Skeleton() {
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }
};

Skeleton& skeleton() {
  static Skeleton s;
  return s;
}

/// Runs `reader`: success or an InputError (counted, and it must be one line) keep the
/// guarantee; anything else is a failure named by `what`.
template <class F>
void reader(Outcome& o, const std::string& what, F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    if (o.input_errors++ == 0) o.first_error = what + ": " + e.what();
    if (std::string_view(e.what()).find('\n') != std::string_view::npos)
      o.failures.push_back(what + ": an InputError of several lines: " + e.what());
  } catch (const std::bad_alloc&) {
    o.failures.push_back(what + ": std::bad_alloc (an allocation the input could not justify)");
  } catch (const Error& e) {
    o.failures.push_back(what + ": error of exit code " + std::to_string(e.exit_code()) +
                         " instead of an InputError: " + e.what());
  } catch (const std::exception& e) {
    o.failures.push_back(what + ": unexpected exception: " + e.what());
  } catch (...) {
    o.failures.push_back(what + ": unexpected exception of an unknown type");
  }
}

/// Every shard's grammar, layout and document check against `m`.
void read_shards(Outcome& o, const Manifest& m, const std::string& label) {
  const Skeleton& s = skeleton();
  for (uint32_t k = 0; k < m.shards.size() && k < s.manifest.shards.size(); ++k)
    reader(o, label + " shard " + std::to_string(k), [&] {
      ShardGrammar g = read_shard_grammar(s.dir, m, k, 1);
      ShardLayout layout = read_shard_layout(s.dir, m, k);
      check_shard_documents(s.dir, m, k, g, layout);
    });
}

}  // namespace

void make_skeleton(const fs::path& archive, bool fresh) {
  std::error_code ec;
  if (!fresh && fs::exists(archive / kManifestFile, ec)) return;
  fs::remove_all(archive, ec);
  if (archive.has_parent_path()) fs::create_directories(archive.parent_path());
  const char* env = std::getenv("GTADOC_BINARY");
  const std::string bin = env && *env ? env : GTADOC_BINARY;
  const fs::path sample = fs::path(GTADOC_SOURCE_DIR) / "data/sample";
  // Five documents (16 KiB of text) in two shards: small enough to read thousands of times.
  std::vector<std::string> args{bin, "compress"};
  for (const char* doc : {"about.rst.txt", "bugs.rst.txt", "contents.rst.txt",
                          "copyright.rst.txt", "installing"})
    args.push_back((sample / doc).string());
  for (const char* a : {"-o", "", "--shards", "2", "--threads", "1"}) args.push_back(a);
  args[args.size() - 5] = archive.string();
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!std::freopen("/dev/null", "w", stdout)) ::_exit(127);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0)
    throw std::runtime_error("cannot make the skeleton archive " + archive.string() + " with " +
                             bin);
}

void use_skeleton(const fs::path& archive) {
  Skeleton& s = skeleton();
  std::string tmpl = (fs::temp_directory_path() / "gtadoc-archive-fuzz-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("cannot create " + tmpl);
  s.dir = tmpl;
  try {
    s.manifest = read_manifest(archive);
  } catch (const Error& e) {
    throw std::runtime_error(archive.string() + ": not a sound skeleton: " + e.what());
  }
  s.names = {kManifestFile};
  for (uint32_t k = 0; k < s.manifest.shards.size(); ++k) s.names.push_back(shard_file_name(k));
  for (const std::string& name : s.names) {
    s.bytes.push_back(read_bytes(archive / name));
    write_bytes(s.dir / name, s.bytes.back());
  }
  if (!verify_archive(s.dir, 1).ok)
    throw std::runtime_error(archive.string() + ": the skeleton does not pass gtadoc verify");
}

const std::vector<std::string>& targets() {
  return skeleton().names;
}

const std::string& original(size_t i) {
  return skeleton().bytes.at(i);
}

Outcome run_one(const uint8_t* data, size_t size) {
  Outcome o;
  Skeleton& s = skeleton();
  if (size == 0 || s.names.empty()) return o;
  const size_t target = data[0] % s.names.size();
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const fs::path file = s.dir / s.names[target];
  write_bytes(file, bytes);

  if (target == 0) {  // the manifest
    Manifest m;
    bool read = false;
    reader(o, "read_manifest", [&] {
      m = read_manifest(s.dir);
      read = true;
    });
    reader(o, "read_manifest (dictionary deferred)", [&] {
      Manifest deferred = read_manifest(s.dir, ManifestRead::kDeferDictionary);
      if (deferred.dict.size() > 0) (void)deferred.dict[deferred.dict.size() - 1];
    });
    reader(o, "archive_directory_problem", [&] { (void)archive_directory_problem(s.dir); });
    if (read) read_shards(o, m, "with the input's manifest:");
  } else {  // shard target - 1
    const uint32_t shard = static_cast<uint32_t>(target - 1);
    read_shards(o, s.manifest, "");
    Manifest unpinned = s.manifest;  // any file size accepted: the datasets are reached
    unpinned.shards[shard].file_bytes = 0;
    reader(o, "without the file size: shard " + std::to_string(shard), [&] {
      ShardGrammar g = read_shard_grammar(s.dir, unpinned, shard, 1);
      ShardLayout layout = read_shard_layout(s.dir, unpinned, shard);
      check_shard_documents(s.dir, unpinned, shard, g, layout);
    });
  }
  // verify reports, it does not throw (but for running out of memory, a failure here).
  reader(o, "verify_archive", [&] {
    const VerifyReport r = verify_archive(s.dir, 1);
    const bool same = bytes == s.bytes[target];
    if (target > 0 && r.ok != same)
      o.failures.push_back(same ? "verify failed the skeleton's own shard: " + r.first_failure()
                                : "verify passed a changed shard file");
    if (target == 0 && same && !r.ok)
      o.failures.push_back("verify failed the skeleton's own manifest: " + r.first_failure());
    for (const VerifyCheck& c : r.checks)
      if (c.detail.find('\n') != std::string::npos)
        o.failures.push_back("verify: a check of several lines: " + c.what);
  });
  write_bytes(file, s.bytes[target]);
  return o;
}

}  // namespace gtadoc::fuzz

/// libFuzzer: the skeleton lives beside the fuzzer (made on the first run, kept after it).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const fs::path archive = (ec ? fs::current_path() : exe.parent_path()) / "archive_fuzz-skeleton.gtd";
  gtadoc::fuzz::make_skeleton(archive, /*fresh=*/false);
  gtadoc::fuzz::use_skeleton(archive);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const gtadoc::fuzz::Outcome o = gtadoc::fuzz::run_one(data, size);
  for (const std::string& f : o.failures) std::fprintf(stderr, "archive fuzz: %s\n", f.c_str());
  if (!o.failures.empty()) std::abort();
  return 0;
}
