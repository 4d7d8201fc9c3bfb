// The isl sets of one transfer (a communicate of a scheduled Computation): which loops fix
// one instance of it, the elements each rank uses in an instance, the ranks those come from,
// whether they come from one rank or are gathered along whole mesh axes, and the mesh axes a
// reduction sums over. Legality (legality.h), its closed forms (legality_closed_form.h), the
// ring of partial sums (ring.h) and lowering (codegen/lower.h) all ask these questions; each
// answer is remembered on the Computation (MemoMap, MemoBool).
// Thread-compatible: uses the Computation's isl context.
#ifndef MESHTUNE_IR_TRANSFER_H_
#define MESHTUNE_IR_TRANSFER_H_

#include <vector>

#include "ir/computation.h"

namespace meshtune::ir {

// How many outer loops fix one instance of transfer `t`: up to and including its loop
// when that loop is serial, up to it when it is the kernel's outermost tensorized loop
// (the transfer then serves the whole kernel call).
int TransferPrefix(const Computation& c, const Communication& t);

// For a transfer with prefix L: P[r..., t_0..t_{L-1}] -> T[e], the elements of T that rank
// r uses (or, for the output, writes) inside one instance.
isl::map TransferElements(const Computation& c, const Communication& t);

// P[r..., t_0..t_{L-1}] -> Mesh[s...]: the ranks holding those elements; along axes the tensor
// is replicated over, the reader's own coordinate is taken.
isl::map TransferSources(const Computation& c, const Communication& t);

// Whether the source's coordinate along mesh axis `a` is one value per reader and instance
// of `t`. Remembered.
bool SourceAxisSingle(const Computation& c, const Communication& t, unsigned a);

// Whether TransferSources(c, t) is single-valued: each rank reads each instance's data
// from one rank. Remembered (Computation::MemoBool), as legality and lowering both ask.
bool SingleSource(const Computation& c, const Communication& t);

// m (domain P[r..., t_0..t_{prefix-1}]) with the distributed loops removed from its
// domain: they equal mesh coordinates, which stay. The domain is then P[r..., serial...].
isl::map DropDistributedLoops(const Computation& c, const isl::map& m, int prefix);

// When transfer `t` reads from several ranks, the mesh axes of an all-gather: its data
// comes from every rank along these axes (each holding a piece) and every rank along
// them needs the same data. Empty when `t` is single-source or not such a gather.
std::vector<int> GatherAxes(const Computation& c, const Communication& t);

// The mesh axes over which a reduction index of the problem is distributed, ascending: a
// communicated output sums its partial results over these axes.
std::vector<int> ReductionAxes(const Computation& c);

// Whether every rank along mesh axis `a` writes the same elements of output transfer `t`
// at each instance of its loop (a reduction along `a` then adds up like elements).
// Remembered per loops.
bool ElementsAlignedAlong(const Computation& c, const Communication& t, int a);

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_TRANSFER_H_
