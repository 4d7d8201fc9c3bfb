/* meshtune's C API for MPI applications, over meshtune/plan.h: a plan for one tensor
 * statement on the application's communicator (opaque handle), where each rank's shard of
 * each tensor lies, and its execution on the application's shards.
 *
 * Every call that can fail returns 0 or a status code (absl::StatusCode's numbers: 3
 * invalid argument, 5 not found, 8 resource exhausted, 9 failed precondition, 13 internal),
 * and meshtune_last_error() then says why. meshtune_plan_create and meshtune_plan_execute are
 * collective over the communicator. A plan is not thread-safe; plans are independent. */
#ifndef MESHTUNE_MESHTUNE_H_
#define MESHTUNE_MESHTUNE_H_

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct meshtune_plan meshtune_plan;

enum meshtune_mode {
  MESHTUNE_WISDOM = 0,   /* the workload's best record in a wisdom file */
  MESHTUNE_ESTIMATE = 1, /* the cost model's best (nothing run) */
  MESHTUNE_MEASURE = 2   /* a tune on this communicator: candidates run in-process, the
                            fastest verified wins (merged into wisdom_file when not NULL) */
};

/* A plan for `expr` with `extents` ("f32" or "f64" `dtype`; NULL means "f32") on `comm`.
 * `wisdom_file` is read in MESHTUNE_WISDOM mode (and written in MESHTUNE_MEASURE); `mesh`
 * ("x=2,y=2") may be NULL to derive the meshes from the communicator's size. On success *plan is
 * set. */
int meshtune_plan_create(const char* expr, const char* extents, const char* dtype, MPI_Comm comm,
                         int mode, const char* wisdom_file, const char* mesh, meshtune_plan** plan);

/* The plan's tensors, the order meshtune_plan_execute takes their shards in. */
int meshtune_plan_num_tensors(const meshtune_plan* plan);
const char* meshtune_plan_tensor(const meshtune_plan* plan, int i);

/* This rank's shard of `tensor`: `start` (global index of its first element), `extents`
 * (the elements it holds) and `strides` (of the application's array of it, row-major, in
 * elements) each receive one value per dim (at most 8). The array holds the product of
 * `extents` elements, dense at those strides: no call of the plan reads or writes past it.
 * Where the schedule's blocks do not divide an extent, the last block holds fewer elements
 * and a rank past the end none (extents 0, an array of no elements); the plan then runs on
 * storage of its own (meshtune_plan_shard_storage), copying the shard in and out, unless the
 * application provides the storage (meshtune_plan_provide_storage). Returns the number of
 * dims, or -1 for an unknown tensor. */
int meshtune_plan_shard(const meshtune_plan* plan, const char* tensor, int64_t* start,
                        int64_t* extents, int64_t* strides);

/* The extents of the schedule's storage of this rank's shard of `tensor` (one value per dim
 * into `storage`): its full block, equal to the extents where the blocks divide. Returns the
 * number of dims, or -1 for an unknown tensor. */
int meshtune_plan_shard_storage(const meshtune_plan* plan, const char* tensor, int64_t* storage);

/* Which arrays this rank passes (to meshtune_plan_execute): `provides` 0 (the default, set
 * at meshtune_plan_create) arrays of the shards' extents, as meshtune_plan_shard says; 1
 * arrays of the whole storage, the product of meshtune_plan_shard_storage's extents each,
 * its first `extents` along each dim the tensor's and the rest scratch the plan may write,
 * used in place (no copy; the plan's own storage is released). meshtune_plan_shard's
 * `strides` are then the storage's. Local to this rank; returns 0, or 8 (resource
 * exhausted) when going back to 0 cannot allocate the plan's storage (the contract is then
 * unchanged). */
int meshtune_plan_provide_storage(meshtune_plan* plan, int provides);

/* Whether this rank's shard of `tensor` holds the tensor's values after
 * meshtune_plan_execute: 1 (every input; the output on every copy, unless the plan leaves
 * the result on one layer), 0 (the output on a rank off that layer: scratch), or -1 for an
 * unknown tensor. */
int meshtune_plan_holds(const meshtune_plan* plan, const char* tensor);
/* Whether this rank runs the plan (0 on ranks beyond a smaller mesh's, which hold empty
 * shards and return from meshtune_plan_execute at once). */
int meshtune_plan_active(const meshtune_plan* plan);

/* The plan's schedule (a trace) and mesh. */
const char* meshtune_plan_trace(const meshtune_plan* plan);
const char* meshtune_plan_mesh(const meshtune_plan* plan);
/* "PSGEMM 2x2, NB 64" when the plan is ScaLAPACK's GEMM (a wisdom record whose answer is the
 * library), else "". Its shards are then block-cyclic, cyclic(NB,NB) on the grid of
 * meshtune_plan_mesh ("x=PROW,y=PCOL"): meshtune_plan_shard gives the local matrix's rows and
 * columns as `extents`, the global index of its first element as `start`, and column-major
 * `strides` {1, lld}; meshtune_plan_shard_storage {lld, local columns}. */
const char* meshtune_plan_library(const meshtune_plan* plan);

/* Runs the plan once on this rank's shards, one pointer per tensor, each an array as
 * meshtune_plan_shard (or meshtune_plan_provide_storage) says. */
int meshtune_plan_execute(meshtune_plan* plan, void* const* shards);

void meshtune_plan_destroy(meshtune_plan* plan);

/* The message of this thread's last failed call ("" when none). */
const char* meshtune_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* MESHTUNE_MESHTUNE_H_ */
