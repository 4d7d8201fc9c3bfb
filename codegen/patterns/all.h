// The patterns of codegen/patterns/, one function each, for the registry
// (codegen/pattern_registry.cc). A new pattern adds its file here and its row there.
#ifndef MESHTUNE_CODEGEN_PATTERNS_ALL_H_
#define MESHTUNE_CODEGEN_PATTERNS_ALL_H_

#include "codegen/pattern.h"
#include "codegen/program.h"

namespace meshtune::codegen::patterns {

const Pattern& Local();
const Pattern& Broadcast();
const Pattern& Shift();
const Pattern& SendRecv();
const Pattern& AllGather();
const Pattern& Reduce();
const Pattern& ReduceScatter();
const Pattern& AllReduce();
const Pattern& AllToAll();
const Pattern& RingReduce();

}  // namespace meshtune::codegen::patterns

#endif  // MESHTUNE_CODEGEN_PATTERNS_ALL_H_
