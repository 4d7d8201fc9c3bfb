// The ScaLAPACK and BLACS entry points meshtune's benchmarks and tests call (Debian's
// libscalapack-openmpi-dev ships no C header for them).
#ifndef MESHTUNE_THIRD_PARTY_SCALAPACK_API_H_
#define MESHTUNE_THIRD_PARTY_SCALAPACK_API_H_

#include <mpi.h>

extern "C" {
void Cblacs_get(int context, int request, int* value);
// A BLACS system handle for an MPI communicator (a grid over it: Cblacs_gridinit), and its
// release.
int Csys2blacs_handle(MPI_Comm comm);
void Cfree_blacs_system_handle(int handle);
void Cblacs_gridinit(int* context, const char* order, int rows, int cols);
void Cblacs_gridinfo(int context, int* rows, int* cols, int* row, int* col);
void Cblacs_gridexit(int context);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb,
               const int* irsrc, const int* icsrc, const int* ictxt, const int* lld, int* info);
void psgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const float* alpha, const float* a, const int* ia, const int* ja, const int* desca,
             const float* b, const int* ib, const int* jb, const int* descb, const float* beta,
             float* c, const int* ic, const int* jc, const int* descc);
void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const double* alpha, const double* a, const int* ia, const int* ja, const int* desca,
             const double* b, const int* ib, const int* jb, const int* descb, const double* beta,
             double* c, const int* ic, const int* jc, const int* descc);
}

#endif  // MESHTUNE_THIRD_PARTY_SCALAPACK_API_H_
