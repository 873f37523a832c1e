#include "coordinator/serve/response_pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace gtadoc {

bool ResponseMemory::take(uint64_t bytes) {
  uint64_t used = used_.load();
  do {
    if (bytes > capacity_ || used > capacity_ - bytes) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes));
  return true;
}

ResponsePipe::ResponsePipe(ResponseMemory& shared, uint64_t own_limit, std::string spill_dir)
    : shared_(shared), own_limit_(own_limit), spill_dir_(std::move(spill_dir)) {}

ResponsePipe::~ResponsePipe() {
  shared_.give(memory_);
  if (fd_ >= 0) ::close(fd_);
}

namespace {

/// An unnamed file for a response's spilled bytes: O_TMPFILE, else a created and at once
/// unlinked one. -1 (errno set) when neither works.
int open_spill_file(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  std::vector<char> name(dir.begin(), dir.end());
  const char tail[] = "/gtadoc-response-XXXXXX";
  name.insert(name.end(), tail, tail + sizeof tail);  // with the terminating NUL
  fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return -1;
  if (::unlink(name.data()) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

}  // namespace

bool ResponsePipe::spill(const char* data, size_t size) {
  if (fd_ < 0) {
    const int fd = open_spill_file(spill_dir_);
    if (fd < 0) {
      spdlog::warn(
          "serve: cannot create a spill file for a response in {} ({}): the response "
          "is cut",
          spill_dir_, std::strerror(errno));
      return false;
    }
    std::lock_guard lock(mu_);
    fd_ = fd;
  }
  uint64_t offset = file_end_;
  while (size > 0) {
    const ssize_t n = ::pwrite(fd_, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      spdlog::warn("serve: cannot write a response's spill file in {} ({}): the response is cut",
                   spill_dir_, n < 0 ? std::strerror(errno) : "no progress");
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

bool ResponsePipe::append(const char* data, size_t size) {
  if (size == 0) {
    std::lock_guard lock(mu_);
    return !abandoned_ && !failed_;
  }
  std::unique_lock lock(mu_);
  if (abandoned_ || failed_) return false;
  if (memory_ + size <= own_limit_ && shared_.take(size)) {
    memory_ += size;
    while (size > 0) {
      if (segments_.empty() || segments_.back().file_size != 0 ||
          segments_.back().bytes.size() >= kPieceBytes)
        segments_.emplace_back();
      std::string& back = segments_.back().bytes;
      const size_t n = std::min(size, kPieceBytes - back.size());
      back.append(data, n);
      data += n;
      size -= n;
    }
    notify(lock);
    return true;
  }
  // Spilled: the file is written without the lock (only the producer writes it, and the
  // consumer reads only the ranges published below).
  const uint64_t offset = file_end_;
  lock.unlock();
  const bool written = spill(data, size);
  lock.lock();
  if (!written) {
    failed_ = true;
    notify(lock);
    return false;
  }
  file_end_ = offset + size;
  spilled_ += size;
  if (abandoned_) return false;
  if (!segments_.empty() && segments_.back().file_size != 0 &&
      segments_.back().file_offset + segments_.back().file_size == offset) {
    segments_.back().file_size += size;
  } else {
    Segment s;
    s.file_offset = offset;
    s.file_size = size;
    segments_.push_back(std::move(s));
  }
  notify(lock);
  return true;
}

void ResponsePipe::close(bool keep_alive) {
  std::unique_lock lock(mu_);
  closed_ = true;
  keep_alive_ = keep_alive;
  notify(lock);
}

uint64_t ResponsePipe::spilled() const {
  std::lock_guard lock(mu_);
  return spilled_;
}

void ResponsePipe::notify(std::unique_lock<std::mutex>& lock) {
  if (!waiting_ || !wake_) return;
  waiting_ = false;
  std::function<void()> wake = wake_;
  lock.unlock();
  wake();
}

void ResponsePipe::set_wake(std::function<void()> wake) {
  std::lock_guard lock(mu_);
  wake_ = std::move(wake);
}

ResponsePipe::Piece ResponsePipe::take() {
  Piece p;
  std::unique_lock lock(mu_);
  if (abandoned_ || failed_) {
    p.state = State::kFailed;
    return p;
  }
  if (segments_.empty()) {
    if (closed_) {
      p.state = State::kEnd;
      p.keep_alive = keep_alive_;
    } else {
      waiting_ = true;
    }
    return p;
  }
  Segment& front = segments_.front();
  p.state = State::kData;
  if (front.file_size == 0) {
    p.bytes = std::move(front.bytes);
    segments_.pop_front();
    memory_ -= p.bytes.size();
    shared_.give(p.bytes.size());
    return p;
  }
  uint64_t offset = front.file_offset;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(kPieceBytes, front.file_size));
  front.file_offset += n;
  front.file_size -= n;
  if (front.file_size == 0) segments_.pop_front();
  const int fd = fd_;
  lock.unlock();
  p.bytes.resize(n);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, p.bytes.data() + got, n - got, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      spdlog::warn("serve: cannot read a response's spill file back ({}): the response is cut",
                   r < 0 ? std::strerror(errno) : "end of file");
      lock.lock();
      failed_ = true;
      p.state = State::kFailed;
      p.bytes.clear();
      return p;
    }
    got += static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return p;
}

void ResponsePipe::abandon() {
  std::lock_guard lock(mu_);
  abandoned_ = true;
  for (const Segment& s : segments_)
    if (s.file_size == 0) {
      memory_ -= s.bytes.size();
      shared_.give(s.bytes.size());
    }
  segments_.clear();
  wake_ = nullptr;
  // The file's blocks go now; the file itself when the producer lets go of the pipe. A failed
  // truncation only delays that.
  if (fd_ >= 0 && ::ftruncate(fd_, 0) != 0)
    spdlog::debug("serve: cannot truncate an abandoned response's spill file ({})",
                  std::strerror(errno));
}

}  // namespace gtadoc
