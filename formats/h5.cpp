// The ground floor of the HDF5 layer (formats/h5.h): HDF5's error stack read into one-line
// InputErrors (detail::throw_h5_error, behind H5_TRY), the process-wide lock and the release of
// it (Unlocked), handles, files and groups, and the width helpers the writer, the reader and the
// attributes share (formats/h5_internal.h).
#include "formats/h5.h"

#include <hdf5.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <limits>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "common/error.h"
#include "formats/h5_internal.h"

static_assert(std::is_same_v<hid_t, gtadoc::h5::Id>, "h5::Id must be hid_t (HDF5 >= 1.10)");
static_assert(H5_VERSION_GE(1, 10, 3), "gtadoc needs HDF5 1.10.3 or newer");

namespace gtadoc {
namespace h5 {
namespace {

namespace fs = std::filesystem;

// One frame of the HDF5 error stack, copied out while walking (no HDF5 call may run inside the
// walk callback: most API calls clear the stack being walked).
struct Frame {
  std::string desc;
  hid_t minor = -1;
};

herr_t collect_frame(unsigned /*n*/, const H5E_error2_t* err, void* data) {
  auto* frames = static_cast<std::vector<Frame>*>(data);
  frames->push_back({err->desc ? err->desc : "", err->min_num});
  return 0;
}

// Replaces control bytes so that a message stays on one line.
std::string one_line(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return s;
}

bool contains_nocase(const std::string& haystack, const char* needle) {
  std::string h = haystack;
  std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return std::tolower(c); });
  return h.find(needle) != std::string::npos;
}

struct StackSummary {
  std::string detail;     ///< most specific description ("" when the stack is empty)
  bool checksum = false;  ///< some frame reports a checksum failure (data or metadata)
};

// Reads and clears the calling thread's default error stack.
StackSummary summarize_stack() {
  std::vector<Frame> frames;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_frame, &frames);
  StackSummary s;
  for (const Frame& f : frames) {
    if (contains_nocase(f.desc, "checksum")) s.checksum = true;
    if (s.detail.empty() && !f.desc.empty()) s.detail = f.desc;
  }
  if (s.detail.empty() && !frames.empty() && frames.front().minor >= 0) {
    char buf[256] = {};
    H5E_type_t type;
    if (H5Eget_msg(frames.front().minor, &type, buf, sizeof buf) > 0) s.detail = buf;
  }
  H5Eclear2(H5E_DEFAULT);
  s.detail = one_line(s.detail);
  return s;
}

// The OS reason inside a file-driver message ("unable to open file: name = '...', errno = 13,
// error message = 'Permission denied', ...") or "" when there is none.
std::string os_reason(const std::string& detail) {
  const std::string key = "error message = '";
  size_t begin = detail.find(key);
  if (begin == std::string::npos) return "";
  begin += key.size();
  size_t end = detail.find('\'', begin);
  return end == std::string::npos ? "" : detail.substr(begin, end - begin);
}

// "H5Dread(ds.id(), ...)" -> "H5Dread".
std::string call_name(const char* expr) {
  std::string e = expr ? expr : "HDF5 call";
  size_t paren = e.find('(');
  if (paren != std::string::npos) e.resize(paren);
  size_t colon = e.rfind("::");
  if (colon != std::string::npos) e.erase(0, colon + 2);
  return e;
}

PropList file_access_plist(bool create) {
  PropList fapl(H5_TRY(H5Pcreate(H5P_FILE_ACCESS)));
  // New files use exactly the 1.10 object format, whatever the library version: checksummed
  // object headers and superblock, compact chunk indexes. Existing files open as they are.
  if (create) H5_TRY(H5Pset_libver_bounds(fapl.id(), H5F_LIBVER_V110, H5F_LIBVER_V110));
  // No 2 KiB aggregation blocks for metadata and small raw data: archive files are written
  // once, and the unused ends of those blocks would stay in the file (halves a small file).
  H5_TRY(H5Pset_meta_block_size(fapl.id(), 0));
  H5_TRY(H5Pset_small_data_block_size(fapl.id(), 0));
#if H5_VERSION_GE(1, 10, 7)
  // Archives are written once under a temporary name and then only read: locks buy nothing and
  // fail on some parallel file systems.
  H5_TRY(H5Pset_file_locking(fapl.id(), false, true));
#endif
  return fapl;
}

std::recursive_mutex& global_mutex() {
  static std::recursive_mutex m;
  return m;
}

/// How many h5::Lock objects of this thread hold global_mutex().
thread_local unsigned lock_depth = 0;

// Silence the main thread as soon as the library is loaded; other threads call init() first.
[[maybe_unused]] const bool kInitialized = (init(), true);

}  // namespace

hid_t mem_type(Width w) {
  switch (w) {
    case Width::kU8:
      return H5T_NATIVE_UINT8;
    case Width::kU16:
      return H5T_NATIVE_UINT16;
    case Width::kU32:
      return H5T_NATIVE_UINT32;
    case Width::kU64:
      return H5T_NATIVE_UINT64;
  }
  GTADOC_FAIL("bad h5::Width");
}

hid_t file_type(Width w) {
  switch (w) {
    case Width::kU8:
      return H5T_STD_U8LE;
    case Width::kU16:
      return H5T_STD_U16LE;
    case Width::kU32:
      return H5T_STD_U32LE;
    case Width::kU64:
      return H5T_STD_U64LE;
  }
  GTADOC_FAIL("bad h5::Width");
}

uint64_t max_of_width(Width w) {
  return w == Width::kU64 ? std::numeric_limits<uint64_t>::max()
                          : (uint64_t{1} << (8 * static_cast<int>(w))) - 1;
}

// "/grammar/symbols" for dataset "symbols" below group "/grammar".
std::string object_path(Id loc, const std::string& name) {
  char buf[512] = {};
  ssize_t len = H5Iget_name(loc, buf, sizeof buf);
  std::string base = len > 0 ? std::string(buf, std::min<size_t>(len, sizeof buf - 1)) : "";
  if (base.empty() || base.back() != '/') base += '/';
  return one_line(base + name);
}

Unlocked::Unlocked() : depth_(lock_depth) {
  for (unsigned i = 0; i < depth_; ++i) global_mutex().unlock();
}
Unlocked::~Unlocked() {
  for (unsigned i = 0; i < depth_; ++i) global_mutex().lock();
}

void init() {
  thread_local bool done = false;
  if (done) return;
  H5open();
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  done = true;
}

Lock::Lock() : lock_(global_mutex()) {
  ++lock_depth;
  init();
}
Lock::~Lock() {
  --lock_depth;
}

bool close_id(Kind kind, Id id) noexcept {
  herr_t rc = -1;
  switch (kind) {
    case Kind::kFile:
      rc = H5Fclose(id);
      break;
    case Kind::kGroup:
      rc = H5Gclose(id);
      break;
    case Kind::kDataset:
      rc = H5Dclose(id);
      break;
    case Kind::kDataspace:
      rc = H5Sclose(id);
      break;
    case Kind::kDatatype:
      rc = H5Tclose(id);
      break;
    case Kind::kPropList:
      rc = H5Pclose(id);
      break;
    case Kind::kAttribute:
      rc = H5Aclose(id);
      break;
  }
  return rc >= 0;
}

template <Kind K>
void Handle<K>::close() {
  if (id_ < 0) return;
  Id id = release();
  if (!close_id(K, id)) detail::throw_h5_error("H5*close", __FILE__, __LINE__);
}

template class Handle<Kind::kFile>;
template class Handle<Kind::kGroup>;
template class Handle<Kind::kDataset>;
template class Handle<Kind::kDataspace>;
template class Handle<Kind::kDatatype>;
template class Handle<Kind::kPropList>;
template class Handle<Kind::kAttribute>;

int64_t open_object_count() {
  init();
  return H5_TRY(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL));
}

File create_file(const fs::path& file) {
  init();
  PropList fapl = file_access_plist(/*create=*/true);
  PropList fcpl(H5_TRY(H5Pcreate(H5P_FILE_CREATE)));
  // No timestamps: the same input gives byte-identical files.
  H5_TRY(H5Pset_obj_track_times(fcpl.id(), false));
  // Keep the root's attributes in its object header (dense storage costs ~2 KiB).
  H5_TRY(H5Pset_attr_phase_change(fcpl.id(), 64, 48));
  hid_t id = H5Fcreate(file.c_str(), H5F_ACC_EXCL, fcpl.id(), fapl.id());
  if (id < 0) {
    StackSummary s = summarize_stack();
    std::string reason = os_reason(s.detail);
    throw InputError("cannot create: " + (reason.empty() ? s.detail : reason), __FILE__, __LINE__);
  }
  return File(id);
}

File open_file(const fs::path& file, bool writable) {
  init();
  std::error_code ec;
  auto status = fs::status(file, ec);
  if (!fs::exists(status)) throw InputError("cannot open: no such file");
  if (!fs::is_regular_file(status)) throw InputError("cannot open: not a regular file");
  PropList fapl = file_access_plist(/*create=*/false);
  hid_t id = H5Fopen(file.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl.id());
  if (id < 0) {
    StackSummary s = summarize_stack();
    std::string reason = os_reason(s.detail);
    if (!reason.empty()) throw InputError("cannot open: " + reason, __FILE__, __LINE__);
    std::string msg = "cannot open (not an HDF5 file, truncated or unreadable)";
    if (s.checksum)
      msg += ": checksum mismatch (corrupted data)";
    else if (!s.detail.empty())
      msg += ": " + s.detail;
    throw InputError(msg, __FILE__, __LINE__);
  }
  return File(id);
}

Group create_group(Id loc, const std::string& name) {
  return with_context("group " + object_path(loc, name), [&] {
    PropList gcpl(H5_TRY(H5Pcreate(H5P_GROUP_CREATE)));
    H5_TRY(H5Pset_obj_track_times(gcpl.id(), false));  // reproducible files, smaller headers
    return Group(H5_TRY(H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, gcpl.id(), H5P_DEFAULT)));
  });
}

Group open_group(Id loc, const std::string& name) {
  return with_context("group " + object_path(loc, name), [&] {
    if (!has_link(loc, name)) throw InputError("missing");
    return Group(H5_TRY(H5Gopen2(loc, name.c_str(), H5P_DEFAULT)));
  });
}

bool has_link(Id loc, const std::string& name) {
  return H5_TRY(H5Lexists(loc, name.c_str(), H5P_DEFAULT)) > 0;
}

Width min_width(uint64_t max_value) {
  if (max_value <= 0xffu) return Width::kU8;
  if (max_value <= 0xffffu) return Width::kU16;
  if (max_value <= 0xffffffffu) return Width::kU32;
  return Width::kU64;
}
}  // namespace h5

namespace detail {

void throw_h5_error(const char* expr, const char* file, int line) {
  h5::StackSummary s = h5::summarize_stack();
  if (s.checksum) throw InputError("checksum mismatch (corrupted data)", file, line);
  // An operating-system failure (a full disk, an I/O error) is told by its reason alone, not by
  // the write's internals HDF5 lists with it (times, buffers, offsets).
  const std::string reason = h5::os_reason(s.detail);
  if (!reason.empty())
    throw InputError(
        std::string(s.detail.find("read failed") != std::string::npos ? "cannot read: "
                                                                      : "cannot write: ") +
            reason,
        file, line);
  std::string msg = "HDF5 " + h5::call_name(expr) + " failed";
  if (!s.detail.empty()) msg += ": " + s.detail;
  throw InputError(msg, file, line);
}

}  // namespace detail
}  // namespace gtadoc
