// NCCL communicator and the device shuffle. See nccl_comm.h.
#include "cluster/nccl_comm.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "cluster/collective_error.h"
#include "cluster/comm.h"
#include "cluster/cross_memory.h"
#include "cluster/device_shuffle.h"
#include "common/error.h"
#include "common/timer.h"
#include "worker/engine.h"

#ifdef GTADOC_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif

namespace gtadoc {

#ifdef GTADOC_HAVE_NCCL

namespace detail {

[[noreturn]] void throw_nccl_error(int code, const char* expr, const char* file, int line) {
  std::string call(expr ? expr : "?");
  if (auto paren = call.find('('); paren != std::string::npos) call.resize(paren);
  std::string msg =
      "NCCL call " + call + " failed: " + ncclGetErrorString(static_cast<ncclResult_t>(code));
  if (const char* last = ncclGetLastError(nullptr); last != nullptr && *last != '\0')
    msg += std::string(" (") + last + ")";
  throw InternalError(one_line(msg), file, line);
}

}  // namespace detail

bool NcclComm::available() {
  return true;
}

std::function<std::unique_ptr<NcclComm>()> NcclComm::start(Comm& comm, int device) {
  ncclUniqueId id{};
  std::vector<uint8_t> buf(sizeof(id));
  run_collectively(comm, [&] {
    if (comm.rank() == 0) {
      NCCL_TRY(ncclGetUniqueId(&id));
      std::memcpy(buf.data(), &id, sizeof(id));
    }
  });
  comm.broadcast(buf, 0);
  GTADOC_EXPECTS(buf.size() == sizeof(id), "NCCL unique id of the wrong size");
  std::memcpy(&id, buf.data(), sizeof(id));
  const int rank = comm.rank(), size = comm.size();
  return [id, rank, size, device]() -> std::unique_ptr<NcclComm> {
    Timer timer;
    CUDA_TRY(cudaSetDevice(device));
    ncclComm_t c = nullptr;
    NCCL_TRY(ncclCommInitRank(&c, size, id, rank));
    std::unique_ptr<NcclComm> comm(new NcclComm(c, rank, size, device));
    const double init_s = timer.seconds();
    comm->connect_peers();
    spdlog::debug("NCCL: communicator on GPU {} in {:.3f}s, peers connected in {:.3f}s", device,
                  init_s, timer.seconds() - init_s);
    return comm;
  };
}

void NcclComm::connect_peers() {
  // NCCL connects a pair of ranks at their first send/recv (~0.2 s on one node): one value to
  // and from every peer now, while the shards load, instead of inside the first shuffle.
  auto c = static_cast<ncclComm_t>(handle_);
  cudaStream_t stream = nullptr;
  CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* buf = nullptr;
  const cudaError_t alloc = cudaMalloc(&buf, 2 * sizeof(uint64_t) * static_cast<size_t>(size_));
  if (alloc != cudaSuccess) {
    cudaStreamDestroy(stream);
    CUDA_TRY(alloc);
  }
  auto* send = static_cast<uint64_t*>(buf);
  uint64_t* recv = send + size_;
  ncclResult_t rc = ncclGroupStart();
  for (int p = 0; p < size_ && rc == ncclSuccess; ++p) {
    if (p == rank_) continue;
    rc = ncclSend(send + p, 1, ncclUint64, p, c, stream);
    if (rc == ncclSuccess) rc = ncclRecv(recv + p, 1, ncclUint64, p, c, stream);
  }
  const ncclResult_t end = ncclGroupEnd();
  if (rc == ncclSuccess) rc = end;
  const cudaError_t sync = rc == ncclSuccess ? cudaStreamSynchronize(stream) : cudaSuccess;
  cudaFree(buf);
  cudaStreamDestroy(stream);
  NCCL_TRY(rc);
  CUDA_TRY(sync);
}

NcclComm::~NcclComm() {
  if (handle_ != nullptr) {
    Timer timer;
    cudaSetDevice(device_);
    ncclCommDestroy(static_cast<ncclComm_t>(handle_));
    spdlog::debug("NCCL: communicator destroyed in {:.3f}s", timer.seconds());
  }
}

std::unique_ptr<DeviceRecords> shuffle_device_records(Comm& comm, NcclComm& nccl,
                                                      DeviceRecords& records,
                                                      std::span<const uint64_t> offsets) {
  const int parts = comm.size(), me = comm.rank();
  GTADOC_EXPECTS(nccl.size() == parts && nccl.rank() == me,
                 "NCCL communicator does not match the MPI one");
  GTADOC_EXPECTS(offsets.size() == static_cast<size_t>(parts) + 1 &&
                     offsets[static_cast<size_t>(parts)] == records.size(),
                 "shuffle_device_records: offsets do not match the records");
  GTADOC_EXPECTS(nccl.device() == records.device(),
                 "shuffle_device_records: records on another GPU than the communicator's");
  const uint32_t w = records.width();
  std::vector<uint64_t> send(static_cast<size_t>(parts));
  for (int p = 0; p < parts; ++p) send[p] = offsets[p + 1] - offsets[p];
  const std::vector<uint64_t> recv = comm.alltoall(send);
  std::vector<uint64_t> at(static_cast<size_t>(parts) + 1, 0);
  for (int p = 0; p < parts; ++p) at[p + 1] = at[p] + recv[p];
  std::unique_ptr<DeviceRecords> out = records.allocate(at[parts]);

  CUDA_TRY(cudaSetDevice(records.device()));
  auto stream = static_cast<cudaStream_t>(records.stream());
  auto c = static_cast<ncclComm_t>(nccl.handle());
  if (send[me] > 0) {  // this rank's own partition stays on its GPU
    CUDA_TRY(cudaMemcpyAsync(out->keys() + at[me] * w, records.keys() + offsets[me] * w,
                             send[me] * w * sizeof(uint32_t), cudaMemcpyDeviceToDevice, stream));
    CUDA_TRY(cudaMemcpyAsync(out->counts() + at[me], records.counts() + offsets[me],
                             send[me] * sizeof(uint64_t), cudaMemcpyDeviceToDevice, stream));
  }
  NCCL_TRY(ncclGroupStart());
  for (int p = 0; p < parts; ++p) {
    if (p == me) continue;
    if (send[p] > 0) {
      NCCL_TRY(ncclSend(records.keys() + offsets[p] * w, send[p] * w, ncclUint32, p, c, stream));
      NCCL_TRY(ncclSend(records.counts() + offsets[p], send[p], ncclUint64, p, c, stream));
    }
    if (recv[p] > 0) {
      NCCL_TRY(ncclRecv(out->keys() + at[p] * w, recv[p] * w, ncclUint32, p, c, stream));
      NCCL_TRY(ncclRecv(out->counts() + at[p], recv[p], ncclUint64, p, c, stream));
    }
  }
  NCCL_TRY(ncclGroupEnd());
  CUDA_TRY(cudaStreamSynchronize(stream));
  return out;
}

#else  // no NCCL in this build: the MPI shuffle is the only one

namespace detail {
[[noreturn]] void throw_nccl_error(int code, const char* expr, const char* file, int line) {
  throw InternalError(
      std::string("NCCL call ") + (expr ? expr : "?") + " failed with code " + std::to_string(code),
      file, line);
}
}  // namespace detail

bool NcclComm::available() {
  return false;
}

std::function<std::unique_ptr<NcclComm>()> NcclComm::start(Comm&, int) {
  GTADOC_FAIL("this build of gtadoc has no NCCL");
}

NcclComm::~NcclComm() = default;

void NcclComm::connect_peers() {}

std::unique_ptr<DeviceRecords> shuffle_device_records(Comm&, NcclComm&, DeviceRecords&,
                                                      std::span<const uint64_t>) {
  GTADOC_FAIL("this build of gtadoc has no NCCL");
}

#endif

bool shuffle_may_use_nccl(bool resident, bool large_shuffle) {
  const std::string mode = shuffle_setting();
  if (mode == "mpi" || mode == "host") return false;
  if (mode == "auto") return resident || large_shuffle;
  return true;
}

bool large_shuffle_task(Task task, int ranks_on_node, uint64_t shard_bytes_per_rank,
                        bool pulls_on_one_node) {
  if (pulls_on_one_node || ranks_on_node < 0 || ranks_on_node > 2) return false;
  switch (task) {
    case Task::kRankedInvertedIndex:
      return shard_bytes_per_rank >= kNcclRankedShardBytesPerRank;
    case Task::kSequenceCount:
    case Task::kInvertedIndex:
    case Task::kTermVector:
      return shard_bytes_per_rank >= kNcclShardBytesPerRank;
    default:
      return false;
  }
}

bool use_nccl_shuffle(Comm& comm, bool gpu_engine, bool resident, bool large_shuffle,
                      std::string* why) {
  std::string reason;
  const std::string mode = shuffle_setting();
  check_cross_memory_setting();
  if (comm.size() < 2)
    reason = "one rank";
  else if (mode == "mpi" || mode == "host")
    reason = "GTADOC_SHUFFLE=" + mode;
  else if (!shuffle_may_use_nccl(resident, large_shuffle))
    reason =
        "one query: NCCL's set-up (~0.5-1 s) would cost more than it saves; the GPUs' records move "
        "staged through host memory; GTADOC_SHUFFLE=nccl forces NCCL";
  else if (!gpu_engine)
    reason = "a rank runs the CPU engine";
  else if (!NcclComm::available())
    reason = "this build has no NCCL";
  else if (comm.local_size() > gpu_count())
    reason = std::to_string(comm.local_size()) + " ranks on a node with " +
             std::to_string(gpu_count()) + " GPUs (NCCL needs one GPU per rank)";
  const bool all = comm.size() >= 2 && comm.allreduce_and(reason.empty());
  if (why != nullptr) {
    if (all)
      *why = std::string("NCCL between the GPUs (records stay on the devices until owned") +
             (resident || mode != "auto" ? ")" : "; one query of a task with a large shuffle)");
    else if (comm.is_in_process())
      *why = "this process's memory (the ranks are its threads; " +
             (reason.empty() ? std::string("another rank cannot use NCCL") : reason) + ")";
    else
      *why =
          "MPI (" + (reason.empty() ? std::string("another rank cannot use NCCL") : reason) + ")";
  }
  return all;
}

}  // namespace gtadoc
