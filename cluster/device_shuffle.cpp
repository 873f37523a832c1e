// The MPI shuffle of device-resident records, staged through host memory. See device_shuffle.h.
#include "cluster/device_shuffle.h"

#include <spdlog/spdlog.h>

#include <string>
#include <vector>

#include "cluster/comm.h"
#include "common/error.h"
#include "common/settings.h"
#include "common/timer.h"
#include "worker/records.h"

namespace gtadoc {

std::string shuffle_setting() {
  return std::string(settings::word("GTADOC_SHUFFLE"));
}

bool device_shuffle_wanted() {
  return shuffle_setting() != "host";
}

std::unique_ptr<DeviceRecords> shuffle_device_records_mpi(Comm& comm, DeviceRecords& records,
                                                          std::span<const uint64_t> offsets,
                                                          size_t max_round_bytes) {
  const size_t p = static_cast<size_t>(comm.size());
  const size_t me = static_cast<size_t>(comm.rank());
  const uint64_t n = records.size();
  GTADOC_EXPECTS(offsets.size() == p + 1 && offsets[0] == 0 && offsets[p] == n,
                 "shuffle_device_records_mpi: offsets do not match the records");
  const uint32_t w = records.width();
  std::vector<uint64_t> send(p);
  for (size_t d = 0; d < p; ++d) {
    GTADOC_EXPECTS(offsets[d] <= offsets[d + 1], "shuffle_device_records_mpi: offsets decrease");
    send[d] = offsets[d + 1] - offsets[d];
  }
  const std::vector<uint64_t> recv = comm.alltoall(send);
  std::vector<uint64_t> at(p + 1, 0);  // the result's section of each source
  for (size_t s = 0; s < p; ++s) at[s + 1] = at[s] + recv[s];
  std::unique_ptr<DeviceRecords> out = records.allocate(at[p]);

  // Host arrays hold the remote parts only: the own part is cut out of both sides.
  const uint64_t own = send[me], own_in = recv[me];
  std::vector<size_t> send_first(p), send_count(p), recv_first(p), recv_count(p);
  for (size_t d = 0; d < p; ++d) {
    send_first[d] = d <= me ? offsets[d] : offsets[d] - own;
    send_count[d] = d == me ? 0 : send[d];
    recv_first[d] = d <= me ? at[d] : at[d] - own_in;
    recv_count[d] = d == me ? 0 : recv[d];
  }
  KeyVector in_keys;
  CountVector in_counts;
  Timer timer;
  double down_s = 0, mpi_s = 0;
  {
    KeyVector keys;
    CountVector counts;
    keys.resize((n - own) * w);
    counts.resize(n - own);
    records.download_range(0, offsets[me], keys.data(), counts.data());
    records.download_range(offsets[me + 1], n - offsets[me + 1], keys.data() + offsets[me] * w,
                           counts.data() + offsets[me]);
    down_s = timer.seconds();
    in_keys.resize((at[p] - own_in) * w);
    in_counts.resize(at[p] - own_in);
    exchange_records(comm, w, keys.data(), counts.data(), send_first, send_count, in_keys.data(),
                     in_counts.data(), recv_first, recv_count, max_round_bytes);
    mpi_s = timer.seconds() - down_s;
  }
  out->copy_range(records, offsets[me], at[me], own);
  out->upload_range(0, at[me], in_keys.data(), in_counts.data());
  out->upload_range(at[me + 1], at[p] - at[me + 1], in_keys.data() + at[me] * w,
                    in_counts.data() + at[me]);
  spdlog::debug(
      "staged shuffle: {} records out, {} in, {} kept; download {:.4f}s, exchange {:.4f}s, upload "
      "{:.4f}s",
      n - own, at[p] - own_in, own, down_s, mpi_s, timer.seconds() - down_s - mpi_s);
  return out;
}

}  // namespace gtadoc
