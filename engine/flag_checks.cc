#include "engine/flag_checks.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/excerpt.h"

namespace meshtune::engine {

namespace {

std::string Quoted(absl::string_view value) { return absl::StrCat("'", base::Excerpt(value), "'"); }

bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// "-12", "+7", "42": optional sign, then digits only.
bool DecimalInteger(absl::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return AllDigits(s);
}

}  // namespace

CLI::Validator NumberIn(double min, double max, bool min_exclusive) {
  const std::string range = absl::StrFormat("%s%g, %g]", min_exclusive ? "(" : "[", min, max);
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        const std::string v(absl::StripAsciiWhitespace(value));
        double x = 0;
        // strtod would also take hex floats and "infinity"; SimpleAtod takes nan and inf
        // too, which are told apart below.
        if (v.empty() || !absl::SimpleAtod(v, &x)) {
          return absl::StrCat(Quoted(value), " is not a number; give a number in ", range);
        }
        if (!std::isfinite(x)) {
          // SimpleAtod gives inf for 1e400 as well as for "inf".
          const bool spelled = absl::StrContains(absl::AsciiStrToLower(v), "n");
          return absl::StrCat(Quoted(value),
                              spelled ? " is not a finite number" : " is out of range",
                              "; give a number in ", range);
        }
        if (x < min || (min_exclusive && x == min) || x > max) {
          return absl::StrCat(Quoted(value), " is out of range; give a number in ", range);
        }
        return "";
      },
      absl::StrCat("NUMBER in ", range));
}

CLI::Validator IntegerIn(int64_t min, int64_t max) {
  std::string range = absl::StrCat(min, " to ", max);
  if (min == std::numeric_limits<int64_t>::min() && max == std::numeric_limits<int64_t>::max()) {
    range = "-2^63 to 2^63-1";
  } else if (min == std::numeric_limits<int>::min() && max == std::numeric_limits<int>::max()) {
    range = "-2^31 to 2^31-1";
  }
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        const std::string v(absl::StripAsciiWhitespace(value));
        if (!DecimalInteger(v))
          return absl::StrCat(Quoted(value), " is not an integer; give an integer from ", range);
        int64_t x = 0;
        if (!absl::SimpleAtoi(v, &x) || x < min || x > max) {
          return absl::StrCat(Quoted(value), " is out of range; give an integer from ", range);
        }
        value = absl::StrCat(x);  // CLI11 would read "010" as octal
        return "";
      },
      absl::StrCat("INTEGER from ", range));
}

CLI::Validator Unsigned64() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        const std::string v(absl::StripAsciiWhitespace(value));
        uint64_t x = 0;
        if (!AllDigits(v)) {
          return absl::StrCat(Quoted(value), " is not an integer; give an integer from 0 to ",
                              std::numeric_limits<uint64_t>::max());
        }
        if (!absl::SimpleAtoi(v, &x)) {
          return absl::StrCat(Quoted(value), " is out of range; give an integer from 0 to ",
                              std::numeric_limits<uint64_t>::max());
        }
        value = absl::StrCat(x);
        return "";
      },
      "INTEGER from 0 to 2^64-1");
}

CLI::Validator OneOf(std::vector<std::string> choices) {
  const std::string list = absl::StrJoin(choices, ", ");
  return CLI::Validator(
      [choices = std::move(choices), list](std::string& value) -> std::string {
        for (const std::string& c : choices) {
          if (value == c) return "";
        }
        return absl::StrCat(Quoted(value), " is not one of ", list);
      },
      absl::StrCat("one of ", list));
}

absl::Status CheckHostPort(absl::string_view flag, absl::string_view address,
                           bool allow_port_zero) {
  if (absl::StartsWith(address, "unix:") && address.size() > 5) return absl::OkStatus();
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", Quoted(address), ": ", why));
  };
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) return bad("expected HOST:PORT, e.g. 127.0.0.1:50051");
  const absl::string_view host = address.substr(0, colon), port = address.substr(colon + 1);
  if (host.empty()) return bad("the host is empty (expected HOST:PORT, e.g. 127.0.0.1:50051)");
  if (host.front() == '[' ? host.back() != ']' || host.size() < 3
                          : host.find_first_of(":[] \t/") != absl::string_view::npos) {
    return bad("the host is not a name, an IPv4 address or a bracketed IPv6 address ([::1])");
  }
  if (!AllDigits(port)) return bad(absl::StrCat("the port ", Quoted(port), " is not a number"));
  const int64_t lowest = allow_port_zero ? 0 : 1;
  int64_t p = 0;
  if (port.size() > 6 || !absl::SimpleAtoi(port, &p) || p < lowest || p > 65535) {
    return bad(absl::StrCat("port ", base::Excerpt(port), " is out of range (", lowest, " to 65535",
                            allow_port_zero ? "; 0 picks a free port)" : ")"));
  }
  return absl::OkStatus();
}

CLI::Validator HostPort(bool allow_port_zero) {
  return CLI::Validator(
      [allow_port_zero](std::string& value) -> std::string {
        // CLI11 prefixes the flag's name itself.
        const absl::Status s = CheckHostPort("", value, allow_port_zero);
        return s.ok() ? "" : std::string(absl::StripPrefix(s.message(), " "));
      },
      "HOST:PORT");
}

std::string ParseFailureMessage(const CLI::App* app, const CLI::Error& e) {
  // CLI11's messages quote arguments whole and have no structure to cut tokens by: cut
  // each word instead (a word is a token or a piece of CLI11's own text).
  std::vector<std::string> words;
  for (absl::string_view w : absl::StrSplit(e.what(), ' ')) {
    // Our validators' messages quote excerpts already ('...', 82 characters).
    words.push_back(w.size() > 2 * base::kMaxExcerpt ? base::Excerpt(w) : std::string(w));
  }
  std::string out = absl::StrJoin(words, " ") + "\n";
  if (app->get_help_ptr() != nullptr)
    out += "Run with " + app->get_help_ptr()->get_name() + " for more information.\n";
  return out;
}

}  // namespace meshtune::engine
