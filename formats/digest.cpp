#include "formats/digest.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "common/error.h"

namespace gtadoc {

namespace {
constexpr size_t kBufferBytes = 1 << 16;  // small updates are gathered before hashing

void check(int ok, const char* what) {
  if (ok != 1) throw InternalError(std::string("OpenSSL: ") + what + " failed");
}
}  // namespace

struct Sha256Hasher::Ctx {
  EVP_MD_CTX* md = nullptr;
  ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256Hasher::Sha256Hasher() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  if (ctx_->md == nullptr) throw ResourceError("OpenSSL: cannot allocate a digest context");
  check(EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr), "EVP_DigestInit_ex");
  buffer_.reserve(kBufferBytes);
}

Sha256Hasher::~Sha256Hasher() = default;

void Sha256Hasher::flush() {
  if (buffer_.empty()) return;
  check(EVP_DigestUpdate(ctx_->md, buffer_.data(), buffer_.size()), "EVP_DigestUpdate");
  buffer_.clear();
}

void Sha256Hasher::update(std::span<const uint8_t> bytes) {
  if (bytes.size() >= kBufferBytes) {
    flush();
    check(EVP_DigestUpdate(ctx_->md, bytes.data(), bytes.size()), "EVP_DigestUpdate");
    return;
  }
  if (buffer_.size() + bytes.size() > kBufferBytes) flush();
  buffer_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void Sha256Hasher::update_u64(uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
  update(std::span<const uint8_t>(b, 8));
}

Sha256 Sha256Hasher::finish() {
  flush();
  Sha256 d{};
  unsigned int len = 0;
  check(EVP_DigestFinal_ex(ctx_->md, d.data(), &len), "EVP_DigestFinal_ex");
  GTADOC_EXPECTS(len == d.size(), "SHA-256 digest of unexpected length");
  return d;
}

Sha256 sha256_of(std::string_view bytes) {
  Sha256Hasher h;
  h.update(bytes);
  return h.finish();
}

Sha256 sha256_file(const std::filesystem::path& file) {
  std::FILE* f = std::fopen(file.c_str(), "rb");
  if (f == nullptr) throw InputError(file.string() + ": cannot open: " + std::strerror(errno));
  Sha256Hasher h;
  std::vector<uint8_t> buf(4 << 20);
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) h.update({buf.data(), n});
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (failed) throw InputError(file.string() + ": read error: " + std::strerror(err));
  return h.finish();
}

std::string to_hex(const Sha256& d) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  s.reserve(64);
  for (uint8_t b : d) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

std::optional<Sha256> sha256_from_hex(std::string_view hex) {
  if (hex.size() != 64) return std::nullopt;
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  Sha256 d{};
  for (size_t i = 0; i < d.size(); ++i) {
    const int hi = value(hex[2 * i]), lo = value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    d[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return d;
}

}  // namespace gtadoc
