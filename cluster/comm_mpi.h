// Comm's MPI handles (Comm::Mpi), shared by the communicator (cluster/comm.cpp) and its
// collectives (cluster/collectives.cpp). Includes mpi.h: for the cluster layer's sources only,
// never for a public header. Not a public API.
#pragma once

// The C API only: keep the deprecated C++ bindings (which need libmpi_cxx) out.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <string>

#include "cluster/comm.h"

namespace gtadoc {

struct Comm::Mpi {
  MPI_Comm world = MPI_COMM_NULL;  // private duplicate of MPI_COMM_WORLD
  MPI_Comm node = MPI_COMM_NULL;   // ranks sharing this node's memory
  bool owns_init = false;          // this process called MPI_Init_thread
  std::string pml_note;            // prefer_shared_memory_pml's choice, or node_layout_note
};

}  // namespace gtadoc
