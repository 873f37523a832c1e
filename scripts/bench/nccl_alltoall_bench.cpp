// gtadoc_nccl_alltoall_bench: the plain NCCL all-to-all that the device shuffle
// (cluster/nccl_comm.h, shuffle_device_records) is measured against (docs/PERFORMANCE.md,
// "End to end"): every rank sends BYTES / ranks to every other rank with grouped ncclSend/ncclRecv
// from one device buffer into another, on a communicator built as gtadoc builds it
// (NcclComm::start).
//
//   mpirun -np 2 gtadoc_nccl_alltoall_bench BYTES [BYTES...]     (bytes each rank sends in all)
//
// Prints, per size, the fastest of REPS (GTADOC_A2A_REPS, default 5) exchanges after one warm-up:
// seconds and GB/s (bytes each rank sends / seconds).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cluster/comm.h"
#include "cluster/nccl_comm.h"
#include "common/error.h"
#include "common/timer.h"

int main(int argc, char** argv) {
  using namespace gtadoc;
  Comm& comm = Comm::init(argc, argv);
  if (argc < 2) {
    if (comm.rank() == 0) std::fprintf(stderr, "usage: gtadoc_nccl_alltoall_bench BYTES...\n");
    return 2;
  }
  try {
    int devices = 0;
    CUDA_TRY(cudaGetDeviceCount(&devices));
    GTADOC_EXPECTS(devices > 0, "no CUDA device");
    const int device = comm.local_rank() % devices;
    CUDA_TRY(cudaSetDevice(device));
    std::unique_ptr<NcclComm> nccl = NcclComm::start(comm, device)();
    const char* reps_env = std::getenv("GTADOC_A2A_REPS");
    const int reps = std::max(1, reps_env != nullptr ? std::atoi(reps_env) : 5);
    cudaStream_t stream;
    CUDA_TRY(cudaStreamCreate(&stream));
    const int parts = comm.size(), me = comm.rank();
    auto* c = static_cast<ncclComm_t>(nccl->handle());
    for (int a = 1; a < argc; ++a) {
      const uint64_t total = std::stoull(argv[a]);
      const uint64_t per = total / static_cast<uint64_t>(parts);  // per peer
      char *send = nullptr, *recv = nullptr;
      CUDA_TRY(cudaMalloc(&send, std::max<uint64_t>(1, per * parts)));
      CUDA_TRY(cudaMalloc(&recv, std::max<uint64_t>(1, per * parts)));
      CUDA_TRY(cudaMemset(send, 1, per * parts));
      double best = 1e30;
      for (int r = 0; r <= reps; ++r) {
        comm.barrier();
        Timer t;
        NCCL_TRY(ncclGroupStart());
        for (int p = 0; p < parts; ++p) {
          if (p == me) continue;
          NCCL_TRY(ncclSend(send + p * per, per, ncclUint8, p, c, stream));
          NCCL_TRY(ncclRecv(recv + p * per, per, ncclUint8, p, c, stream));
        }
        NCCL_TRY(ncclGroupEnd());
        CUDA_TRY(cudaStreamSynchronize(stream));
        const double s =
            double(comm.allreduce(static_cast<uint64_t>(t.seconds() * 1e9), ReduceOp::kMax)) / 1e9;
        if (r > 0) best = std::min(best, s);  // r == 0: warm-up
      }
      const double sent = double(per) * (parts - 1);
      if (me == 0)
        std::printf(
            "{\"ranks\": %d, \"bytes_sent_per_rank\": %.0f, \"seconds\": %.6f, \"GBps\": %.2f}\n",
            parts, sent, best, sent / best / 1e9);
      CUDA_TRY(cudaFree(send));
      CUDA_TRY(cudaFree(recv));
    }
    CUDA_TRY(cudaStreamDestroy(stream));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gtadoc_nccl_alltoall_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
