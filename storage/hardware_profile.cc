#include "storage/hardware_profile.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/excerpt.h"
#include "base/paths.h"
#include "google/protobuf/util/json_util.h"
#include "storage/home_dir.h"

namespace meshtune::storage {
namespace {

constexpr size_t kMaxNameLength = 64;

absl::Status FileError(int error, absl::string_view what, absl::string_view path) {
  return absl::ErrnoToStatus(error, absl::StrCat("cannot ", what, " ", path));
}

// The profile's GEMM table and collective costs; InvalidArgument as their Create says.
absl::StatusOr<cost::GemmTable> GemmTableOf(const v1::HardwareProfile& p) {
  std::vector<cost::GemmSample> samples;
  for (const v1::GemmRate& r : p.gemm_rates())
    samples.push_back({r.m(), r.n(), r.k(), r.flops_per_s()});
  return cost::GemmTable::Create(samples);
}

absl::StatusOr<cost::CollectiveCosts> CollectiveCostsOf(const v1::HardwareProfile& p) {
  std::vector<std::pair<cost::CollectiveForm, cost::CollectiveLine>> lines;
  for (const v1::CollectiveFit& f : p.collectives()) {
    const std::optional<cost::CollectiveForm> c = cost::ParseCollective(f.kind());
    if (!c.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown collective \"", base::Excerpt(f.kind()), "\""));
    }
    lines.push_back({*c, {f.group(), f.alpha_s(), f.beta_s_per_byte()}});
  }
  return cost::CollectiveCosts::Create(lines);
}

// DataLoss naming `path` unless every number of the profile is finite and not negative
// and its GEMM rates and collective fits make a table (GemmTableOf, CollectiveCostsOf).
absl::Status CheckNumbers(const v1::HardwareProfile& p, const std::string& path) {
  for (const absl::Status& s : {GemmTableOf(p).status(), CollectiveCostsOf(p).status()}) {
    if (!s.ok())
      return absl::DataLossError(absl::StrCat("hardware profile ", path, ": ", s.message()));
  }
  const std::pair<const char*, double> fields[] = {
      {"copy_s_per_byte", p.copy_s_per_byte()},
      {"add_s_per_byte", p.add_s_per_byte()},
      {"alpha_s", p.alpha_s()},
      {"beta_s_per_byte", p.beta_s_per_byte()},
      {"alpha_coll_s", p.alpha_coll_s()},
      {"beta_coll_s_per_byte", p.beta_coll_s_per_byte()},
      {"gamma_s_per_flop", p.gamma_s_per_flop()},
      {"overlap", p.overlap()},
  };
  for (const auto& [field, value] : fields) {
    if (!std::isfinite(value) || value < 0) {
      return absl::DataLossError(absl::StrCat("hardware profile ", path, ": ", field, " is ", value,
                                              "; it must be finite and >= 0"));
    }
  }
  if (p.overlap() > 1) {
    return absl::DataLossError(absl::StrCat("hardware profile ", path, ": overlap is ", p.overlap(),
                                            "; it must be at most 1"));
  }
  if (p.cores() < 0 || p.ranks_per_node() < 0) {
    return absl::DataLossError(absl::StrCat("hardware profile ", path, ": cores is ", p.cores(),
                                            " and ranks_per_node ", p.ranks_per_node(),
                                            "; neither may be negative"));
  }
  if (p.ranks() < 0) {
    return absl::DataLossError(absl::StrCat("hardware profile ", path, ": ranks is ", p.ranks()));
  }
  if (p.has_inter_node()) {
    const v1::InterNode& n = p.inter_node();
    if (n.node_ranks() < 1 || !std::isfinite(n.alpha_s()) || n.alpha_s() < 0 ||
        !std::isfinite(n.beta_s_per_byte()) || n.beta_s_per_byte() < 0) {
      return absl::DataLossError(
          absl::StrCat("hardware profile ", path, ": inter_node has node_ranks ", n.node_ranks(),
                       ", alpha_s ", n.alpha_s(), " and beta_s_per_byte ", n.beta_s_per_byte(),
                       "; it needs node_ranks >= 1 and finite, non-negative numbers"));
    }
  }
  if (p.has_term_scales()) {
    const v1::TermScales& k = p.term_scales();
    const std::pair<const char*, double> scales[] = {{"compute", k.compute()},
                                                     {"point_to_point", k.point_to_point()},
                                                     {"collective", k.collective()},
                                                     {"reduction", k.reduction()}};
    for (const auto& [field, value] : scales) {
      if (!std::isfinite(value) || value <= 0) {
        return absl::DataLossError(absl::StrCat("hardware profile ", path, ": term_scales.", field,
                                                " is ", value, "; it must be finite and > 0"));
      }
    }
    if (!std::isfinite(k.message_s()) || k.message_s() < 0) {
      return absl::DataLossError(absl::StrCat("hardware profile ", path,
                                              ": term_scales.message_s is ", k.message_s(),
                                              "; it must be finite and >= 0"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string ProfileDir() {
  if (const char* home = std::getenv("MESHTUNE_HOME"); home != nullptr && *home != '\0') {
    return absl::StrCat(home, "/profiles");
  }
  return absl::StrCat(HomeDir(), "/.meshtune/profiles");
}

absl::Status ValidateProfileName(absl::string_view name) {
  const std::string quoted = absl::StrCat("\"", base::Excerpt(name), "\"");
  if (name.empty() || name.size() > kMaxNameLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid hardware profile name ", quoted, ": it has ", name.size(),
                     " characters; a name has 1 to ", kMaxNameLength));
  }
  for (const char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid hardware profile name ", quoted, ": character '",
                       absl::CHexEscape(std::string(1, c)),
                       "' is not allowed (letters, digits, '_', '-' and '.' are)"));
    }
  }
  return absl::OkStatus();
}

std::string ProfilePath(absl::string_view name) {
  return absl::StrCat(ProfileDir(), "/", name, ".json");
}

absl::StatusOr<v1::HardwareProfile> LoadProfile(absl::string_view name) {
  if (absl::Status s = ValidateProfileName(name); !s.ok()) return s;
  const std::string path = ProfilePath(name);
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("no hardware profile \"", name, "\" in ",
                                              ProfileDir(), "; run meshtune calibrate --name ",
                                              name));
    }
    return FileError(errno, "read the hardware profile", path);
  }
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return FileError(errno, "read the hardware profile", path);
  v1::HardwareProfile profile;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;  // a newer meshtune may store more
  if (const auto status =
          google::protobuf::util::JsonStringToMessage(text.str(), &profile, options);
      !status.ok()) {
    return absl::DataLossError(absl::StrCat("cannot parse the hardware profile ", path, ": ",
                                            status.message().ToString()));
  }
  if (absl::Status s = CheckNumbers(profile, path); !s.ok()) return s;
  profile.set_name(std::string(name));
  return profile;
}

absl::Status SaveProfile(const v1::HardwareProfile& profile) {
  if (absl::Status s = ValidateProfileName(profile.name()); !s.ok()) return s;
  const std::string dir = ProfileDir();
  if (absl::Status s = base::MakeDirs(dir); !s.ok()) return s;
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  if (const auto status = google::protobuf::util::MessageToJsonString(profile, &json, options);
      !status.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot print the hardware profile as JSON: ", status.message().ToString()));
  }
  const std::string path = ProfilePath(profile.name());
  std::string temp = absl::StrCat(dir, "/.", profile.name(), ".json.XXXXXX");
  const int fd = mkstemp(temp.data());
  if (fd < 0) return FileError(errno, "create a temporary file in", dir);
  json += "\n";
  int error = 0;
  for (size_t written = 0; written < json.size() && error == 0;) {
    const ssize_t n = write(fd, json.data() + written, json.size() - written);
    if (n > 0) {
      written += static_cast<size_t>(n);
    } else if (n == 0 || errno != EINTR) {
      error = n == 0 ? EIO : errno;
    }
  }
  if (error == 0 && fchmod(fd, 0644) != 0) error = errno;  // mkstemp makes it 0600
  if (error == 0 && fsync(fd) != 0) error = errno;
  if (close(fd) != 0 && error == 0) error = errno;
  if (error != 0) {
    unlink(temp.c_str());
    return FileError(error, "write", temp);
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    unlink(temp.c_str());
    return FileError(e, "rename the new profile to", path);
  }
  return absl::OkStatus();
}

absl::Status RemoveProfile(absl::string_view name) {
  if (absl::Status s = ValidateProfileName(name); !s.ok()) return s;
  const std::string path = ProfilePath(name);
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return FileError(errno, "remove", path);
  return absl::OkStatus();
}

cost::CostParams ToCostParams(const v1::HardwareProfile& profile) {
  cost::CostParams params;
  params.alpha = profile.alpha_s();
  params.beta = profile.beta_s_per_byte();
  params.alpha_coll = profile.alpha_coll_s();
  params.beta_coll = profile.beta_coll_s_per_byte();
  params.gamma = profile.gamma_s_per_flop();
  params.overlap = profile.overlap();
  params.cores = profile.cores();
  params.ranks_per_node = profile.ranks_per_node();
  params.copy = profile.copy_s_per_byte();
  params.add = profile.add_s_per_byte();
  params.gather = profile.gather_s_per_byte();
  // A loaded profile's tables are valid (LoadProfile checks them); a bad one is left out.
  if (absl::StatusOr<cost::GemmTable> gemm = GemmTableOf(profile); gemm.ok())
    params.gemm = *std::move(gemm);
  if (absl::StatusOr<cost::CollectiveCosts> c = CollectiveCostsOf(profile); c.ok())
    params.collectives = *std::move(c);
  if (profile.has_term_scales()) {
    const v1::TermScales& k = profile.term_scales();
    params.scales = {k.compute(), k.point_to_point(), k.collective(), k.reduction(), k.message_s()};
  }
  if (profile.has_inter_node()) {
    params.node_ranks = profile.inter_node().node_ranks();
    params.alpha_node = profile.inter_node().alpha_s();
    params.beta_node = profile.inter_node().beta_s_per_byte();
  }
  return params;
}

}  // namespace meshtune::storage
