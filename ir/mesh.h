// The processor mesh: 1 to 3 named axes with sizes, one rank per mesh point, and an
// optional memory budget per rank. A plain value; thread-safe to read.
#ifndef MESHTUNE_IR_MESH_H_
#define MESHTUNE_IR_MESH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace meshtune::ir {

struct MeshAxis {
  std::string name;
  int64_t size = 1;
};

struct Mesh {
  std::vector<MeshAxis> axes;
  std::optional<int64_t> mem_per_rank_bytes;  // no limit when absent

  int64_t Ranks() const;
  int AxisIndex(absl::string_view name) const;  // -1 when absent
  std::string AxisNames() const;                // "x, y"
  std::string ToString() const;                 // "x=8,y=8"
};

inline constexpr int kMaxMeshAxes = 3;
inline constexpr int64_t kMaxRanks = 65536;
inline constexpr int kMaxMeshTextBytes = 1024;  // the longest mesh text ("x=8,y=8") read

// Parses "x=8,y=8" (commas or spaces). Returns InvalidArgument naming the axis or token
// for: no axes, more than 3 axes, a repeated axis, a size below 1 or overflowing, and a
// mesh of more than kMaxRanks ranks.
absl::StatusOr<Mesh> ParseMesh(absl::string_view text);

// The mesh of `axes` (outermost first), checked as ParseMesh checks them: the same
// InvalidArgument messages without a position, and one for an axis name that is not an
// identifier.
absl::StatusOr<Mesh> MeshOf(const std::vector<MeshAxis>& axes);

// Parses a byte size: "2GiB", "512MiB", "64KiB", "1024", also "2G"/"512M"/"64K"/"B".
// Returns InvalidArgument for junk, zero, negative or overflowing sizes.
absl::StatusOr<int64_t> ParseByteSize(absl::string_view text);

}  // namespace meshtune::ir

#endif  // MESHTUNE_IR_MESH_H_
