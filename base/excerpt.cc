#include "base/excerpt.h"

#include "absl/strings/str_format.h"

namespace meshtune::base {

namespace {

void AppendEscaped(absl::string_view text, std::string* out) {
  for (const char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '\t') {
      *out += "\\t";
    } else if (c == '\n') {
      *out += "\\n";
    } else if (c == '\r') {
      *out += "\\r";
    } else if (c < 0x20 || c >= 0x7f) {
      absl::StrAppendFormat(out, "\\x%02X", c);
    } else {
      out->push_back(ch);
    }
  }
}

}  // namespace

std::string Excerpt(absl::string_view text, size_t max) {
  if (max < 8) max = 8;
  std::string out;
  if (text.size() <= max) {
    AppendEscaped(text, &out);
    return out;
  }
  // The start says what the token is, the end where it stops: about 3:1.
  const size_t keep = max - 3;
  const size_t tail = keep / 4;
  AppendEscaped(text.substr(0, keep - tail), &out);
  out += "...";
  AppendEscaped(text.substr(text.size() - tail), &out);
  return out;
}

std::string ExcerptList(const std::vector<std::string>& items, size_t max) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string item = Excerpt(items[i]);
    if (i > 0 && out.size() + 2 + item.size() > max) return out + ", ...";
    if (i > 0) out += ", ";
    out += item;
  }
  return out;
}

}  // namespace meshtune::base
