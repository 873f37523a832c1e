// Heartbeat: the side channel that ends a job whose rank stopped answering. See heartbeat.h.
#include "cluster/heartbeat.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "common/error.h"
#include "common/settings.h"
#include "common/temporaries.h"

namespace gtadoc {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kLostExitCode = static_cast<int>(ErrorKind::kResource);
constexpr milliseconds kConnectWait{5000};  // a rank's connection to rank 0, at start-up
constexpr milliseconds kClosedGrace{300};   // a closed connection counts when outlived by this
constexpr milliseconds kAbortWait{2000};    // end_job's time before the process _exits itself

/// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

/// One message on the wire, 16 bytes in the sender's byte order (every rank of a job runs the
/// same binary on the same kind of machine).
struct Frame {
  enum Type : uint8_t { kHello = 'H', kBeat = 'B', kQuit = 'Q', kEnd = 'E' };
  uint8_t type = 0;
  uint8_t code = 0;  // kEnd: the exit code
  uint16_t pad = 0;
  int32_t rank = 0;  // kHello: the sender's rank
  uint64_t key = 0;  // kHello: the job's key (rank 0's card)
};
static_assert(sizeof(Frame) == 16);

/// Sends one frame without blocking; false when it could not go (buffer full, peer gone).
bool send_frame(int fd, const Frame& f) {
  return ::send(fd, &f, sizeof f, MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(sizeof f);
}

std::string errno_text() {
  return std::strerror(errno);
}

/// Connects to the first of `addresses` (IPv4, network order) that answers on `port` within
/// `wait`, trying them side by side. Returns an invalid Fd when none does.
Fd connect_first(const std::vector<uint32_t>& addresses, uint16_t port, milliseconds wait) {
  const auto deadline = Clock::now() + wait;
  while (Clock::now() < deadline) {
    std::vector<Fd> tries;
    for (uint32_t a : addresses) {
      Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (!s) continue;
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = htons(port);
      to.sin_addr.s_addr = a;
      if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0 ||
          errno == EINPROGRESS)
        tries.push_back(std::move(s));
    }
    const auto round_end = std::min(deadline, Clock::now() + milliseconds(1000));
    while (!tries.empty()) {
      const auto left = std::chrono::duration_cast<milliseconds>(round_end - Clock::now());
      if (left.count() <= 0) break;
      std::vector<pollfd> fds;
      for (const Fd& s : tries) fds.push_back({s.get(), POLLOUT, 0});
      if (::poll(fds.data(), fds.size(), static_cast<int>(left.count())) < 0 && errno != EINTR)
        break;
      std::vector<Fd> still;
      for (size_t i = 0; i < tries.size(); ++i) {
        if (fds[i].revents == 0) {
          still.push_back(std::move(tries[i]));
          continue;
        }
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(tries[i].get(), SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
          return std::move(tries[i]);
      }
      tries = std::move(still);
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  return Fd();
}

std::string seconds_text(int s) {
  return std::to_string(s) + " s";
}

void write_stderr(const std::string& line) {
  for (size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n <= 0 && errno != EINTR) return;
    if (n > 0) done += static_cast<size_t>(n);
  }
}

}  // namespace

int heartbeat_timeout_from_env() {
  return static_cast<int>(settings::seconds("GTADOC_HEARTBEAT_TIMEOUT"));
}

Heartbeat::Listener::~Listener() {
  if (fd >= 0) ::close(fd);
}

std::unique_ptr<Heartbeat::Listener> Heartbeat::listen() {
  auto l = std::make_unique<Listener>();
  l->fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (l->fd < 0) GTADOC_FAIL("heartbeat: socket: " + errno_text());
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof any;
  if (::bind(l->fd, reinterpret_cast<const sockaddr*>(&any), sizeof any) != 0 ||
      ::listen(l->fd, SOMAXCONN) != 0 ||
      ::getsockname(l->fd, reinterpret_cast<sockaddr*>(&any), &len) != 0)
    GTADOC_FAIL("heartbeat: listening on an ephemeral port: " + errno_text());
  l->port = ntohs(any.sin_port);
  std::random_device rd;
  l->key = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return l;
}

Heartbeat::Card Heartbeat::card(const Listener* listener) {
  Card c{};
  if (::gethostname(c.host, sizeof c.host - 1) != 0 || c.host[0] == '\0')
    std::snprintf(c.host, sizeof c.host, "?");
  if (listener == nullptr) return c;
  c.port = listener->port;
  c.job_key = listener->key;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return c;
  for (ifaddrs* i = list; i != nullptr && c.addresses < std::size(c.address); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
    c.address[c.addresses++] = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
  }
  ::freeifaddrs(list);
  return c;
}

// ------------------------------------------------------------------------------------ state

struct Heartbeat::State {
  struct Peer {
    int rank = -1;
    Fd fd;
    Clock::time_point heard;
    std::optional<Clock::time_point> closed;  // end of stream without a goodbye
    bool quit = false;                        // said goodbye: no longer watched
    uint8_t buf[sizeof(Frame)] = {};
    size_t have = 0;
  };
  struct Pending {  // rank 0: accepted, hello not read yet
    Fd fd;
    Clock::time_point deadline;
  };

  Options opt;
  std::vector<Card> cards;
  std::unique_ptr<Listener> listener;  // rank 0 until every peer said hello
  std::vector<Pending> pending;
  std::vector<Peer> peers;  // rank 0: one per other rank (index rank - 1); else rank 0 only
  milliseconds interval{1000};
  Fd wake_read, wake_write;
  std::thread thread;

  std::mutex mu;
  std::condition_variable cv;
  int hellos = 0;                 // rank 0: peers that said hello
  std::vector<bool> hello_from;   // rank 0: by rank
  bool worker_connected = false;  // another rank: its connection to rank 0 was made
  bool stop = false;              // the destructor asks the thread to say goodbye and end
  int end_code = -1;              // the job is ending with this code (ending(), or a peer's kEnd)
  bool end_sent = false;          // the thread has told the peers
  bool lost = false;              // a loss is being handled: the process ends

  void wake() {
    const char b = 1;
    ssize_t ignored = ::write(wake_write.get(), &b, 1);
    (void)ignored;
  }
  void run();
  void accept_pending(Clock::time_point now);
  void read_pending(Pending& p, Clock::time_point now, bool* done);
  void read_peer(Peer& p, Clock::time_point now);
  void send_all(const Frame& f, int except_rank = -1);
  [[noreturn]] void lose(const Peer& p, const std::string& why);
  [[noreturn]] void quiet_exit(int code);
};

void Heartbeat::State::send_all(const Frame& f, int except_rank) {
  for (Peer& p : peers)
    if (p.fd && !p.quit && p.rank != except_rank) send_frame(p.fd.get(), f);
}

void Heartbeat::State::accept_pending(Clock::time_point now) {
  for (;;) {
    Fd s(::accept4(listener->fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!s) return;
    const int one = 1;
    ::setsockopt(s.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pending.push_back({std::move(s), now + kConnectWait});
  }
}

void Heartbeat::State::read_pending(Pending& p, Clock::time_point now, bool* done) {
  Frame f;
  const ssize_t n = ::recv(p.fd.get(), &f, sizeof f, MSG_PEEK | MSG_DONTWAIT);
  if (n < static_cast<ssize_t>(sizeof f)) {
    const bool waiting = (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) ||
                         (n > 0 && n < static_cast<ssize_t>(sizeof f));
    *done = !waiting || now >= p.deadline;
    return;
  }
  ::recv(p.fd.get(), &f, sizeof f, MSG_DONTWAIT);
  *done = true;
  if (f.type != Frame::kHello || f.key != cards[0].job_key || f.rank < 1 || f.rank >= opt.size)
    return;  // not one of this job's ranks: dropped
  Peer& peer = peers[static_cast<size_t>(f.rank - 1)];
  if (peer.fd) return;  // a second hello for the same rank: dropped
  peer.fd = std::move(p.fd);
  peer.heard = now;
  std::lock_guard<std::mutex> lock(mu);
  hello_from[static_cast<size_t>(f.rank)] = true;
  if (++hellos == opt.size - 1) listener.reset();  // everyone is in
  cv.notify_all();
}

void Heartbeat::State::read_peer(Peer& p, Clock::time_point now) {
  for (;;) {
    const ssize_t n = ::recv(p.fd.get(), p.buf + p.have, sizeof p.buf - p.have, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {  // end of stream, or the connection failed: the peer's process is gone
      p.fd.reset();
      if (!p.quit) p.closed = now;
      return;
    }
    p.heard = now;
    p.have += static_cast<size_t>(n);
    if (p.have < sizeof(Frame)) continue;
    Frame f;
    std::memcpy(&f, p.buf, sizeof f);
    p.have = 0;
    if (f.type == Frame::kQuit) {
      p.quit = true;
      p.fd.reset();
      return;
    }
    if (f.type == Frame::kEnd) {
      std::lock_guard<std::mutex> lock(mu);
      if (end_code < 0) end_code = f.code != 0 ? f.code : kLostExitCode;
    }
  }
}

void Heartbeat::State::quiet_exit(int code) {
  std::unique_lock<std::mutex> lock(temporaries_mutex());  // kept: no commit can follow
  remove_temporaries_locked();
  ::_exit(code);
}

void Heartbeat::State::lose(const Peer& p, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu);
    lost = true;
    cv.notify_all();
  }
  // The cleanup of a stop request (coordinator/crash_report.h): under the registry's lock,
  // which a commit holds too, and kept until the process ends.
  std::unique_lock<std::mutex> lock(temporaries_mutex());
  const bool committed = output_committed_locked();
  const bool removed = !remove_temporaries_locked().empty();
  if (opt.rank == 0 || opt.speaks_for_node) {
    const std::string me = opt.rank == 0 ? "" : "rank " + std::to_string(opt.rank) + ": ";
    write_stderr("gtadoc: error: " + me + "lost rank " + std::to_string(p.rank) + " on host " +
                 cards[static_cast<size_t>(p.rank)].host + ": " + why +
                 (committed ? "; the output was already complete"
                  : removed ? "; temporary output removed"
                            : "") +
                 "\n");
  }
  Frame end;
  end.type = Frame::kEnd;
  end.code = kLostExitCode;
  send_all(end, p.rank);
  std::thread([] {
    std::this_thread::sleep_for(kAbortWait);
    ::_exit(kLostExitCode);
  }).detach();
  if (opt.end_job) opt.end_job(kLostExitCode);
  ::_exit(kLostExitCode);
}

void Heartbeat::State::run() {
  sigset_t all;
  sigfillset(&all);
  for (int sync : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigdelset(&all, sync);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);  // signals are the other threads' business

  const auto timeout = std::chrono::seconds(opt.timeout_seconds);
  auto next_beat = Clock::now();
  std::optional<Clock::time_point> end_deadline;
  for (;;) {
    std::vector<pollfd> fds{{wake_read.get(), POLLIN, 0}};
    if (listener) fds.push_back({listener->fd, POLLIN, 0});
    const size_t first_pending = fds.size();
    for (const Pending& p : pending) fds.push_back({p.fd.get(), POLLIN, 0});
    const size_t first_peer = fds.size();
    std::vector<Peer*> polled;
    for (Peer& p : peers) {
      if (!p.fd) continue;
      fds.push_back({p.fd.get(), POLLIN, 0});
      polled.push_back(&p);
    }
    const auto wait = std::chrono::duration_cast<milliseconds>(next_beat - Clock::now());
    const int ms = static_cast<int>(std::clamp<int64_t>(wait.count(), 0, interval.count()));
    if (::poll(fds.data(), fds.size(), ms) < 0 && errno != EINTR) continue;
    const auto now = Clock::now();

    if (fds[0].revents != 0) {
      char drain[64];
      while (::read(wake_read.get(), drain, sizeof drain) > 0) {
      }
    }
    if (listener && fds[1].revents != 0) accept_pending(now);
    for (size_t i = 0; i < pending.size() && first_pending + i < first_peer; ++i) {
      if (fds[first_pending + i].revents == 0 && now < pending[i].deadline) continue;
      bool done = false;
      read_pending(pending[i], now, &done);
      if (done) pending[i].fd.reset();
    }
    std::erase_if(pending, [](const Pending& p) { return !p.fd; });
    for (size_t i = 0; i < polled.size(); ++i)
      if (fds[first_peer + i].revents != 0) read_peer(*polled[i], now);

    {
      std::unique_lock<std::mutex> lock(mu);
      if (stop) break;
      if (end_code >= 0 && !end_sent) {  // the job is ending: tell the peers, then wait for it
        end_sent = true;
        end_deadline = now + timeout + kClosedGrace;
        Frame end;
        end.type = Frame::kEnd;
        end.code = static_cast<uint8_t>(end_code);
        lock.unlock();
        send_all(end);
        lock.lock();
        cv.notify_all();
      }
    }
    if (now >= next_beat) {
      Frame beat;
      beat.type = Frame::kBeat;
      send_all(beat);
      next_beat = now + interval;
    }
    if (end_deadline) {  // quiet: the launcher should have ended this process by now
      if (now >= *end_deadline) quiet_exit(end_code);
      continue;
    }
    for (const Peer& p : peers) {
      if (p.quit || (!p.fd && !p.closed)) continue;  // gone in peace, or never connected
      if (p.closed && now - *p.closed >= kClosedGrace)
        lose(p, "its process ended (the heartbeat connection closed)");
      if (now - p.heard >= timeout)
        lose(p, "no heartbeat for " + seconds_text(opt.timeout_seconds));
    }
  }
  Frame bye;
  bye.type = Frame::kQuit;
  send_all(bye);
}

// ------------------------------------------------------------------------------------ public

Heartbeat::Heartbeat(std::unique_ptr<State> state) : state_(std::move(state)) {}

std::unique_ptr<Heartbeat> Heartbeat::start(const Options& options, std::vector<Card> cards,
                                            std::unique_ptr<Listener> listener) {
  GTADOC_EXPECTS(options.size > 1 && options.timeout_seconds > 0 &&
                     cards.size() == static_cast<size_t>(options.size),
                 "heartbeat: bad start-up arguments");
  auto st = std::make_unique<State>();
  st->opt = options;
  st->cards = std::move(cards);
  for (Card& c : st->cards) c.host[sizeof c.host - 1] = '\0';
  // A beat a second; a third of the timeout when that is shorter.
  st->interval = std::min(milliseconds(1000), milliseconds(options.timeout_seconds * 1000 / 3));
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) != 0) GTADOC_FAIL("heartbeat: pipe: " + errno_text());
  st->wake_read = Fd(pipefd[0]);
  st->wake_write = Fd(pipefd[1]);
  const auto now = Clock::now();
  if (options.rank == 0) {
    GTADOC_EXPECTS(listener != nullptr, "heartbeat: rank 0 needs its listener");
    st->listener = std::move(listener);
    st->peers.resize(static_cast<size_t>(options.size - 1));
    for (int r = 1; r < options.size; ++r) st->peers[static_cast<size_t>(r - 1)].rank = r;
  } else {
    const Card& root = st->cards[0];
    std::vector<uint32_t> to;
    if (options.root_on_this_node) to.push_back(htonl(INADDR_LOOPBACK));
    for (uint16_t i = 0; i < std::min<uint16_t>(root.addresses, 8); ++i)
      to.push_back(root.address[i]);
    State::Peer peer;
    peer.rank = 0;
    peer.heard = now;
    peer.fd = connect_first(to, root.port, kConnectWait);
    if (peer.fd) {
      const int one = 1;
      ::setsockopt(peer.fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      Frame hello;
      hello.type = Frame::kHello;
      hello.rank = options.rank;
      hello.key = root.job_key;
      if (!send_frame(peer.fd.get(), hello)) peer.fd.reset();
    }
    st->worker_connected = static_cast<bool>(peer.fd);
    st->peers.push_back(std::move(peer));
  }
  st->hello_from.assign(static_cast<size_t>(options.size), false);
  State* raw = st.get();
  st->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<Heartbeat>(new Heartbeat(std::move(st)));
}

bool Heartbeat::connected(std::chrono::milliseconds wait) {
  State& st = *state_;
  std::unique_lock<std::mutex> lock(st.mu);
  if (st.opt.rank != 0) return st.worker_connected;
  return st.cv.wait_for(lock, wait, [&] { return st.hellos == st.opt.size - 1; });
}

std::string Heartbeat::why() const {
  State& st = *state_;
  if (st.opt.rank != 0)
    return "rank " + std::to_string(st.opt.rank) + " could not connect to rank 0 on host " +
           st.cards[0].host + " (port " + std::to_string(st.cards[0].port) + ")";
  std::lock_guard<std::mutex> lock(st.mu);
  std::string missing;
  int n = 0;
  for (int r = 1; r < st.opt.size; ++r) {
    if (st.hello_from[static_cast<size_t>(r)]) continue;
    if (n++ < 4) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  }
  return "no connection from rank" + std::string(n > 1 ? "s " : " ") + missing +
         (n > 4 ? ", ..." : "") + " within " + std::to_string(kConnectWait.count() / 1000) + " s";
}

void Heartbeat::ending(int code) {
  State& st = *state_;
  std::unique_lock<std::mutex> lock(st.mu);
  if (st.end_code < 0) st.end_code = code != 0 ? code & 0xff : kLostExitCode;
  st.wake();
  // The peers hear of it before this process goes (briefly: the job is ending anyway).
  st.cv.wait_for(lock, milliseconds(500), [&] { return st.end_sent || st.lost; });
}

void Heartbeat::settle(std::chrono::milliseconds wait) {
  State& st = *state_;
  std::unique_lock<std::mutex> lock(st.mu);
  if (st.cv.wait_for(lock, wait, [&] { return st.lost; }))
    st.cv.wait(lock, [] { return false; });  // the heartbeat thread ends the process
}

Heartbeat::~Heartbeat() {
  State& st = *state_;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    st.stop = true;
  }
  st.wake();
  if (!st.thread.joinable()) return;
  if (st.thread.get_id() == std::this_thread::get_id()) {
    st.thread.detach();  // the process is ending from the heartbeat's own thread
    (void)state_.release();
    return;
  }
  st.thread.join();
}

}  // namespace gtadoc
