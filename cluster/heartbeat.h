// The heartbeat of a job of several MPI ranks: a rank that stops answering (its node dead, its
// link down, the process stopped or stuck in the kernel) ends the job within a bounded time,
// where MPI would wait for it forever. Every rank other than 0 keeps one TCP connection to rank
// 0 (rank 0 listens on an ephemeral port of every address; the port, rank 0's addresses and
// every rank's host name are exchanged once by an MPI collective, cluster/comm.cpp). A thread of
// its own on each side sends a beat every second and watches what arrives; the compute threads
// never take part, so long work does not look like silence.
//
// Guarantees:
//  - A peer is lost when nothing came from it for `timeout` seconds, or when its connection
//    closed without a goodbye and this process is still running 0.3 s later (its process ended:
//    killed, crashed; the 0.3 s let a stop request sent to the whole job end this process
//    first). Rank 0 watches every other rank; the others watch rank 0.
//  - On a loss the detecting process prints ONE line on standard error, "gtadoc: error: [rank N:
//    ]lost rank R on host H: WHY", removes the temporaries it is writing (the same registry and
//    lock a stop request uses, common/temporaries.h: never half a commit), tells its peers that
//    the job is ending, and ends the job with exit code 3 through `end_job` (MPI_Abort), or
//    _exit within 2 s when that does not return. Of the ranks that lose rank 0, only the lowest
//    of each node speaks.
//  - A process told that the job is ending (a peer lost a rank, or ended the job on an error of
//    its own) stays quiet and, if the launcher has not ended it within `timeout` seconds, removes
//    its temporaries and exits with the code it was given: no rank outlives the job.
//  - Stopping (the destructor) says goodbye to the peers, so a normal exit is never a loss.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gtadoc {

/// GTADOC_HEARTBEAT_TIMEOUT in seconds (common/settings.h): unset or empty gives 10, "0" turns
/// the heartbeat off, otherwise whole seconds 1-3600 in digits only. Anything else throws
/// UsageError naming the variable and the value.
int heartbeat_timeout_from_env();

class Heartbeat {
 public:
  /// What each rank tells every other at start-up (plain bytes, exchanged by an all-gather).
  struct Card {
    char host[64];        // the rank's host name
    uint64_t job_key;     // rank 0: a random number its peers must present
    uint16_t port;        // rank 0: the port it listens on
    uint16_t addresses;   // rank 0: how many of `address` are set
    uint32_t address[8];  // rank 0: its IPv4 addresses (network byte order), loopback excluded
  };
  /// Rank 0's listening socket, made before the exchange so that its port can be told.
  struct Listener {
    Listener() = default;
    Listener(const Listener&) = delete;
    Listener& operator=(const Listener&) = delete;
    ~Listener();  // closes the socket
    int fd = -1;
    uint16_t port = 0;
    uint64_t key = 0;  // the job's key, a random number
  };

  struct Options {
    int rank = 0;
    int size = 1;
    bool root_on_this_node = false;  // rank 0 shares this rank's node (loopback reaches it)
    bool speaks_for_node = false;    // the lowest rank of this node other than rank 0
    int timeout_seconds = 10;
    /// Ends every rank of the job with the code (MPI_Abort); may return or never return.
    std::function<void(int code)> end_job;
  };

  /// Rank 0: a listener on an ephemeral port of every IPv4 address. Throws InternalError.
  static std::unique_ptr<Listener> listen();
  /// This rank's card (rank 0 passes its listener, the others nullptr).
  static Card card(const Listener* listener);

  /// Starts the thread: rank 0 accepts its peers, another rank connects to rank 0 (the first of
  /// rank 0's addresses that answers within 5 s; loopback first when on rank 0's node). `cards`
  /// holds every rank's card, in rank order.
  static std::unique_ptr<Heartbeat> start(const Options& options, std::vector<Card> cards,
                                          std::unique_ptr<Listener> listener);
  /// True once connected: rank 0 when every peer has said hello (waits up to `wait`), another
  /// rank when its connection to rank 0 is made. On false, `why()` says what is missing.
  bool connected(std::chrono::milliseconds wait);
  std::string why() const;

  /// This process is about to end the job on an error it has reported: the peers go quiet.
  void ending(int code);
  /// An MPI call failed: wait up to `wait` for the heartbeat to find a lost rank (it then ends
  /// the process and this never returns); returns when it did not.
  void settle(std::chrono::milliseconds wait);

  ~Heartbeat();  // goodbye to the peers, thread joined
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

 private:
  struct State;
  explicit Heartbeat(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace gtadoc
