// How this process was started, read from its environment before MPI starts (Comm::init):
// whether an MPI launcher (mpirun/mpiexec, srun, PMI/PMIx) started it, and the MPI and NCCL
// variables set for the job before MPI_Init and any thread start (setenv is not safe beside
// other threads' getenv). A setting with a bad value is taken as unset here: the CLI's check of
// every setting, once MPI runs, then says so in one line for the job.
#pragma once

#include <string>

namespace gtadoc {

/// Whether a launcher started this process for MPI: GTADOC_MPI when set (0: the local mode, 1:
/// MPI), else any of OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_RANK, PMI_SIZE, MV2_COMM_WORLD_SIZE, or
/// SLURM_PROCID with SLURM_NTASKS > 1.
bool launched_by_mpi();

/// Open MPI within one node: its own shared-memory path (pml ob1 over the vader btl) starts in
/// ~0.1 s where UCX's pml takes ~0.3 s (MPI_Init of 4 ranks on the H200 x4 host and of 2 on the
/// dev VM), and moved gtadoc's MPI shuffles by -10..+8 %. Taken when every rank of the job is on
/// this node and no pml was chosen (OMPI_MCA_pml, which `mpirun --mca pml X` also sets);
/// GTADOC_MPI_PML=default leaves Open MPI's own choice. Returns the log line.
std::string prefer_shared_memory_pml();

/// NCCL's buffers through cudaMalloc and CUDA IPC instead of its cuMem* path
/// (NCCL_CUMEM_ENABLE=0), unless the user chose: on the H200 x4 host, `gtadoc run` with the NCCL
/// shuffle on 4 GPUs, alternated, init 2.9-3.2 -> 1.9 s, total 3.9-4.2 -> 2.8 s
/// (sequence-count) and 5.3 -> 4.3-4.7 s (ranked-inverted-index); on 2 GPUs within the noise
/// (docs/PERFORMANCE.md). Set by Comm::init before MPI and any thread start (setenv is not safe
/// beside other threads' getenv); NCCL reads it at its first communicator.
void prefer_legacy_nccl_buffers();

}  // namespace gtadoc
