// The scalar attributes of formats/h5.h: fixed-length strings and unsigned integers, written,
// overwritten and read back (nullopt for an attribute that is missing or of another kind).
#include "formats/h5.h"

#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "common/error.h"
#include "formats/h5_internal.h"

namespace gtadoc::h5 {
namespace {

// Opens attribute `name` of `loc`, or returns an empty handle when there is none.
Attribute open_attr(Id loc, const std::string& name) {
  if (H5_TRY(H5Aexists(loc, name.c_str())) <= 0) return Attribute();
  return Attribute(H5_TRY(H5Aopen(loc, name.c_str(), H5P_DEFAULT)));
}

bool is_scalar(const Attribute& a) {
  Dataspace space(H5_TRY(H5Aget_space(a.id())));
  return H5_TRY(H5Sget_simple_extent_type(space.id())) == H5S_SCALAR;
}

}  // namespace

void write_string_attr(Id loc, const std::string& name, const std::string& value) {
  with_context("attribute " + name, [&] {
    Datatype type(H5_TRY(H5Tcopy(H5T_C_S1)));
    H5_TRY(H5Tset_size(type.id(), std::max<size_t>(1, value.size())));
    H5_TRY(H5Tset_strpad(type.id(), H5T_STR_NULLPAD));
    Dataspace space(H5_TRY(H5Screate(H5S_SCALAR)));
    Attribute attr(
        H5_TRY(H5Acreate2(loc, name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT)));
    std::string buf = value.empty() ? std::string(1, '\0') : value;
    H5_TRY(H5Awrite(attr.id(), type.id(), buf.data()));
    attr.close();
  });
}

void write_uint_attr(Id loc, const std::string& name, uint64_t value, Width store) {
  GTADOC_EXPECTS(value <= max_of_width(store), "value too wide for attribute " + name);
  with_context("attribute " + name, [&] {
    Dataspace space(H5_TRY(H5Screate(H5S_SCALAR)));
    Attribute attr(H5_TRY(
        H5Acreate2(loc, name.c_str(), file_type(store), space.id(), H5P_DEFAULT, H5P_DEFAULT)));
    H5_TRY(H5Awrite(attr.id(), H5T_NATIVE_UINT64, &value));
    attr.close();
  });
}

void overwrite_uint_attr(Id loc, const std::string& name, uint64_t value) {
  with_context("attribute " + name, [&] {
    Attribute attr = open_attr(loc, name);
    if (!attr) throw InputError("missing");
    H5_TRY(H5Awrite(attr.id(), H5T_NATIVE_UINT64, &value));
    attr.close();
  });
}

std::optional<std::string> read_string_attr(Id loc, const std::string& name) {
  return with_context("attribute " + name, [&]() -> std::optional<std::string> {
    Attribute attr = open_attr(loc, name);
    if (!attr || !is_scalar(attr)) return std::nullopt;
    Datatype type(H5_TRY(H5Aget_type(attr.id())));
    if (H5_TRY(H5Tget_class(type.id())) != H5T_STRING || H5_TRY(H5Tis_variable_str(type.id())))
      return std::nullopt;
    size_t size = H5Tget_size(type.id());
    if (size == 0 || size > (1u << 20)) return std::nullopt;
    std::string value(size, '\0');
    H5_TRY(H5Aread(attr.id(), type.id(), value.data()));
    value.resize(std::strlen(value.c_str()));  // null-padded or null-terminated
    return value;
  });
}

std::optional<uint64_t> read_uint_attr(Id loc, const std::string& name) {
  return with_context("attribute " + name, [&]() -> std::optional<uint64_t> {
    Attribute attr = open_attr(loc, name);
    if (!attr || !is_scalar(attr)) return std::nullopt;
    Datatype type(H5_TRY(H5Aget_type(attr.id())));
    if (H5_TRY(H5Tget_class(type.id())) != H5T_INTEGER ||
        H5_TRY(H5Tget_sign(type.id())) != H5T_SGN_NONE || H5Tget_size(type.id()) > 8)
      return std::nullopt;
    uint64_t value = 0;
    H5_TRY(H5Aread(attr.id(), H5T_NATIVE_UINT64, &value));
    return value;
  });
}

}  // namespace gtadoc::h5
