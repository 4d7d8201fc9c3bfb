// A given layout: where one tensor of an application's data already is when it asks for a
// schedule (`--layout TENSOR=SPEC`). ir/layout.h parses specs and places the
// elements; this header only holds the value, so that a Problem can carry its layouts.
#ifndef MESHTUNE_IR_GIVEN_LAYOUT_H_
#define MESHTUNE_IR_GIVEN_LAYOUT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace meshtune::ir {

struct GivenLayout {
  enum class Kind { kBlock, kCyclic, kReplicated, kRoot, kGrid };
  Kind kind = Kind::kBlock;
  int64_t mb = 0, nb = 0;  // cyclic's block sizes (rows, columns); 0 otherwise
  // grid's mesh axis per dim ("*": the dim kept whole); empty otherwise.
  std::vector<std::string> axes;

  // "block", "cyclic(64,64)", "replicated", "root", "grid(y,x)"
  std::string ToString() const;
  // Whether the application keeps a copy on every rank along mesh axis `axis`: replicated
  // (every axis) and a grid that names no dim after it. An output the schedule copies
  // along an axis its given layout does not keep copies along ends on one layer there
  // (codegen::LayerAxes).
  bool KeepsCopiesAlong(const std::string& axis) const;
  bool operator==(const GivenLayout& o) const {
    return kind == o.kind && mb == o.mb && nb == o.nb && axes == o.axes;
  }
};

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_GIVEN_LAYOUT_H_
