// Internals shared by the files of the HDF5 layer (formats/h5.cpp, h5_write.cpp, h5_read.cpp,
// h5_attributes.cpp, nbit.cpp): the HDF5 types of a width, an element of a width, an object's path
// for messages, the prefix that names an object in an error, and the release of the process-wide
// lock around work that enters no HDF5 call. Includes <hdf5.h>, a private dependency of the formats
// layer: for its sources only, never for a public header. Not a public API.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>

#include "common/error.h"
#include "formats/h5.h"

namespace gtadoc::h5 {

/// HDF5's native memory type of unsigned integers of width `w`.
hid_t mem_type(Width w);
/// HDF5's little-endian file type of unsigned integers of width `w`.
hid_t file_type(Width w);
/// The largest value width `w` holds.
uint64_t max_of_width(Width w);

/// Element i of unsigned values of width `w` at `data`.
inline uint64_t load_uint(const void* data, uint64_t i, Width w) {
  switch (w) {
    case Width::kU8:
      return static_cast<const uint8_t*>(data)[i];
    case Width::kU16:
      return static_cast<const uint16_t*>(data)[i];
    case Width::kU32:
      return static_cast<const uint32_t*>(data)[i];
    case Width::kU64:
      return static_cast<const uint64_t*>(data)[i];
  }
  GTADOC_FAIL("bad h5::Width");
}

// "/grammar/symbols" for dataset "symbols" below group "/grammar".
std::string object_path(Id loc, const std::string& name);

// Runs `body`, prefixing any InputError's message with `what` + ": ".
template <class F>
auto with_context(const std::string& what, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const InputError& e) {
    throw InputError(what + ": " + e.what(), e.file().c_str(), e.line());
  }
}

/// Releases every hold this thread has on global_mutex() (h5::Lock's mutex, formats/h5.cpp) for
/// its lifetime, for work that enters no HDF5 call (BatchRead's first touch of its buffers, its
/// reads of stored chunks with pread and its decoding), so other threads' HDF5 calls run
/// meanwhile; takes them back at the end. The HDF5 ids the thread keeps open stay valid: HDF5
/// needs its calls serialized, not its objects.
class Unlocked {
 public:
  Unlocked();
  ~Unlocked();
  Unlocked(const Unlocked&) = delete;
  Unlocked& operator=(const Unlocked&) = delete;

 private:
  unsigned depth_;
};

}  // namespace gtadoc::h5
