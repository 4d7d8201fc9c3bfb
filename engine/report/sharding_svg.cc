#include "engine/report/sharding_svg.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/report/html_page.h"

namespace meshtune::engine {

namespace {

constexpr const char* kColours[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072",
                                    "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
                                    "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"};
constexpr int kMaxLegend = 16;     // legend entries shown
constexpr int64_t kLabelled = 64;  // up to this many ranks, cells carry text
constexpr int kGridsPerRow = 4;    // 3-D meshes: grids side by side

// Colour `i`: the palette first, then hues spread by the golden angle.
std::string Colour(int i) {
  if (i < static_cast<int>(std::size(kColours))) return kColours[i];
  return absl::StrFormat("hsl(%d, 60%%, 75%%)", (i * 137) % 360);
}

// The coordinates of row-major rank `rank` (last axis fastest).
std::vector<int64_t> CoordsOf(int64_t rank, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> c(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    c[d] = rank % sizes[d];
    rank /= sizes[d];
  }
  return c;
}

std::string CoordsText(const std::vector<std::string>& names, const std::vector<int64_t>& c) {
  std::vector<std::string> parts;
  for (size_t d = 0; d < names.size(); ++d) parts.push_back(absl::StrCat(names[d], "=", c[d]));
  return absl::StrCat("(", absl::StrJoin(parts, ", "), ")");
}

// Where a rank's cell goes: grid (3-D: the first coordinate), row and column in it.
struct Place {
  int64_t grid, row, col;
};
Place PlaceOf(const std::vector<int64_t>& c) {
  if (c.size() == 1) return {0, 0, c[0]};
  if (c.size() == 2) return {0, c[0], c[1]};
  return {c[0], c[1], c[2]};
}

}  // namespace

std::string BlockOfRank(const codegen::TensorInfo& tensor,
                        const std::vector<std::string>& axis_names,
                        const std::vector<int64_t>& coords) {
  auto lookup = [&](const std::string& var) -> int64_t {
    for (size_t d = 0; d < axis_names.size(); ++d) {
      if (axis_names[d] == var) return coords[d];
    }
    return 0;
  };
  std::vector<std::string> ranges;
  for (size_t d = 0; d < tensor.shape.size(); ++d) {
    int64_t start = 0;
    if (d < tensor.layout.size()) {
      for (const auto& [size, index] : tensor.layout[d].blocks) start += size * index.Eval(lookup);
    }
    const int64_t extent = d < tensor.local_shape.size() ? tensor.local_shape[d] : tensor.shape[d];
    ranges.push_back(absl::StrCat(start, ":", start + extent));
  }
  return absl::StrCat(tensor.name, "[", absl::StrJoin(ranges, ", "), "]");
}

std::string ShardingSvg(const codegen::TensorInfo& tensor,
                        const std::vector<std::string>& axis_names,
                        const std::vector<int64_t>& axis_sizes) {
  int64_t ranks = 1;
  for (int64_t s : axis_sizes) ranks *= s;
  const std::string open = absl::StrCat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"sharding\"", " data-tensor=\"",
      HtmlEscape(tensor.name), "\" role=\"img\" aria-label=\"",
      HtmlEscape(absl::StrCat("the block of ", tensor.name, " each rank holds")), "\"");
  if (ranks > kMaxDrawnRanks || axis_sizes.empty()) {
    return absl::StrCat(open, " width=\"560\" height=\"30\" font-family=\"sans-serif\" ",
                        "font-size=\"12\"><text x=\"4\" y=\"20\">", ranks,
                        " ranks: too many to draw one cell each</text></svg>\n");
  }
  const bool labelled = ranks <= kLabelled;
  const double cw = labelled ? 150 : 14, ch = labelled ? 46 : 14, gap = 24;
  const int64_t grids = axis_sizes.size() == 3 ? axis_sizes[0] : 1;
  const int64_t rows = axis_sizes.size() == 1 ? 1 : axis_sizes[axis_sizes.size() - 2];
  const int64_t cols = axis_sizes.back();
  const int64_t grid_cols = std::min<int64_t>(grids, kGridsPerRow);
  const int64_t grid_rows = (grids + kGridsPerRow - 1) / kGridsPerRow;
  const double gw = cols * cw + gap, gh = rows * ch + gap + 16;
  // Blocks in order of first appearance, each with its colour and holder count.
  std::map<std::string, std::pair<int, int64_t>> blocks;
  std::vector<std::string> order;
  std::string cells;
  for (int64_t r = 0; r < ranks; ++r) {
    const std::vector<int64_t> c = CoordsOf(r, axis_sizes);
    const std::string block = BlockOfRank(tensor, axis_names, c);
    auto [it, added] = blocks.emplace(block, std::make_pair(static_cast<int>(blocks.size()), 0));
    if (added) order.push_back(block);
    ++it->second.second;
    const Place p = PlaceOf(c);
    const double x = 8 + (p.grid % kGridsPerRow) * gw + p.col * cw;
    const double y = 8 + 16 + (p.grid / kGridsPerRow) * gh + p.row * ch;
    const std::string who = CoordsText(axis_names, c);
    absl::StrAppendFormat(&cells,
                          "<rect class=\"rank-cell\" data-rank=\"%d\" x=\"%g\" y=\"%g\" "
                          "width=\"%g\" height=\"%g\" fill=\"%s\" stroke=\"#555\"><title>rank "
                          "%d %s holds %s</title></rect>\n",
                          r, x, y, cw, ch, Colour(it->second.first), r, HtmlEscape(who),
                          HtmlEscape(block));
    if (labelled) {
      absl::StrAppendFormat(&cells,
                            "<text x=\"%g\" y=\"%g\">%s</text><text x=\"%g\" y=\"%g\" "
                            "font-family=\"monospace\">%s</text>\n",
                            x + 6, y + 17, HtmlEscape(who), x + 6, y + 35, HtmlEscape(block));
    }
  }
  std::string frame;
  for (int64_t g = 0; g < grids; ++g) {
    const double x = 8 + (g % kGridsPerRow) * gw, y = 8 + (g / kGridsPerRow) * gh;
    const std::string caption =
        grids > 1 ? absl::StrCat(axis_names[0], " = ", g)
                  : absl::StrCat(tensor.name, " on ", absl::StrJoin(axis_sizes, " x "), " (",
                                 absl::StrJoin(axis_names, ", "), ")");
    absl::StrAppendFormat(&frame, "<text x=\"%g\" y=\"%g\" font-weight=\"bold\">%s</text>\n", x,
                          y + 12, HtmlEscape(caption));
  }
  const double legend_y = 8 + grid_rows * gh;
  std::string legend;
  const int shown = std::min<int>(static_cast<int>(order.size()), kMaxLegend);
  for (int i = 0; i < shown; ++i) {
    const auto& [colour, holders] = blocks[order[i]];
    const double y = legend_y + 18 * i;
    absl::StrAppendFormat(&legend,
                          "<rect class=\"legend-swatch\" x=\"8\" y=\"%g\" width=\"14\" "
                          "height=\"14\" fill=\"%s\" stroke=\"#555\"/><text x=\"28\" y=\"%g\" "
                          "font-family=\"monospace\">%s held by %d rank%s</text>\n",
                          y, Colour(colour), y + 12, HtmlEscape(order[i]), holders,
                          holders == 1 ? "" : "s");
  }
  double height = legend_y + 18 * shown + 8;
  if (shown < static_cast<int>(order.size())) {
    absl::StrAppendFormat(&legend, "<text x=\"8\" y=\"%g\">and %d more blocks</text>\n", height + 6,
                          static_cast<int>(order.size()) - shown);
    height += 18;
  }
  const double width = std::max(8 + grid_cols * gw, 420.0);
  return absl::StrCat(open,
                      absl::StrFormat(" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" "
                                      "font-family=\"sans-serif\" font-size=\"12\">\n",
                                      width, height, width, height),
                      frame, cells, legend, "</svg>\n");
}

}  // namespace meshtune::engine
