// SHA-256 content digests of an archive (docs/FORMAT.md, "Content digest"): a shard file's
// digest is the SHA-256 of its bytes; the manifest's is the SHA-256 of a canonical serialization
// of everything it describes (archive id, dictionary, document and shard tables with the shard
// digests). Fletcher32 catches corrupted chunks; the digests catch what stays checksum-consistent
// (a dataset rewritten through HDF5, a shard file swapped for another of the same archive).
// OpenSSL's libcrypto computes the hashes.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gtadoc {

using Sha256 = std::array<uint8_t, 32>;

/// Incremental SHA-256 (RAII over an EVP digest context; small updates are buffered).
class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;

  void update(std::span<const uint8_t> bytes);
  void update(std::string_view bytes) {
    update({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  }
  /// Eight bytes, little-endian.
  void update_u64(uint64_t v);
  /// A length-prefixed byte string (so concatenations cannot collide).
  void update_string(std::string_view s) {
    update_u64(s.size());
    update(s);
  }
  /// The digest; the hasher may not be used afterwards.
  Sha256 finish();

 private:
  void flush();
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
  std::string buffer_;
};

Sha256 sha256_of(std::string_view bytes);
/// SHA-256 of a file's bytes (read in 4 MiB pieces). InputError naming the file when it cannot be
/// read.
Sha256 sha256_file(const std::filesystem::path& file);

/// Lower-case hex, 64 characters.
std::string to_hex(const Sha256& d);
/// Parses 64 hex characters (either case); nullopt otherwise.
std::optional<Sha256> sha256_from_hex(std::string_view hex);

}  // namespace gtadoc
