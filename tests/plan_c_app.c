/* An MPI application in C through meshtune's C API (meshtune/meshtune.h):
 * C[m,n] += A[m,k] * B[k,n] (m=32, n=24, k=16) planned from the wisdom file argv[1],
 * executed twice on shards filled where meshtune_plan_shard says, checked against a serial
 * reference on every rank (meshtune_plan_holds: every copy of C holds the result). Rank 0 prints "c plan MESH verified" or "c plan error N: MESSAGE"; exit 0 when
 * verified. A second plan with a bad mode must fail with status 3 and a message. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshtune/meshtune.h"

static float value(char tensor, long i, long j) {
  long h = ((tensor * 5) * 7 + i * 3) * 7 + j * 3;
  return (float)(((h % 11) + 11) % 11 - 5) / 4.0f;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, bad = 0, any = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  meshtune_plan* plan = NULL;
  int status = meshtune_plan_create("C[m,n] += A[m,k] * B[k,n]", "m=32,n=24,k=16", NULL,
                                    MPI_COMM_WORLD, MESHTUNE_WISDOM, argv[1], NULL, &plan);
  if (status != 0) {
    if (rank == 0) printf("c plan error %d: %s\n", status, meshtune_last_error());
    MPI_Finalize();
    return 1;
  }
  int n = meshtune_plan_num_tensors(plan);
  float* shards[8];
  int64_t start[8][8], extents[8][8], strides[8][8];
  for (int t = 0; t < n; ++t) {
    const char* name = meshtune_plan_tensor(plan, t);
    if (meshtune_plan_shard(plan, name, start[t], extents[t], strides[t]) != 2) bad = 1;
    shards[t] = malloc(sizeof(float) * (size_t)(extents[t][0] * extents[t][1]));
    for (long i = 0; i < extents[t][0]; ++i)
      for (long j = 0; j < extents[t][1]; ++j)
        shards[t][i * strides[t][0] + j] = value(name[0], start[t][0] + i, start[t][1] + j);
  }
  for (int call = 1; call <= 2 && !bad; ++call) {
    if (meshtune_plan_execute(plan, (void* const*)shards) != 0) bad = 1;
    for (int t = 0; t < n && !bad; ++t) {
      if (strcmp(meshtune_plan_tensor(plan, t), "C") != 0) continue;
      if (meshtune_plan_holds(plan, "C") != 1) bad = 1;
      for (long i = 0; i < extents[t][0]; ++i) {
        for (long j = 0; j < extents[t][1]; ++j) {
          const long gi = start[t][0] + i, gj = start[t][1] + j;
          double p = 0;
          for (long k = 0; k < 16; ++k) p += value('A', gi, k) * value('B', k, gj);
          const double expected = value('C', gi, gj) + call * p;
          if (fabs(shards[t][i * strides[t][0] + j] - expected) > 1e-3 * (1 + fabs(expected)))
            bad = 1;
        }
      }
    }
  }
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  meshtune_plan* wrong = NULL;
  status = meshtune_plan_create("C[m,n] += A[m,k] * B[k,n]", "m=32,n=24,k=16", NULL,
                                MPI_COMM_WORLD, 7, argv[1], NULL, &wrong);
  if (rank == 0) {
    if (status == 3 && wrong == NULL)
      printf("bad mode: %s\n", meshtune_last_error());
    printf(any ? "c plan MISMATCH\n" : "c plan %s verified\n", meshtune_plan_mesh(plan));
  }
  for (int t = 0; t < n; ++t) free(shards[t]);
  meshtune_plan_destroy(plan);
  MPI_Finalize();
  return any;
}
