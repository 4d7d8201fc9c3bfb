// The lookup a plan makes in a wisdom file (engine::LookupWisdom: only the lines of the
// asked workload parsed) against importing every line into an in-memory database and
// looking up there (ImportWisdom + Lookup, what Plan::Create did before), on one core.
// Prints the median of --reps of each, for the workload of the file's last line.
//
//   bazel build -c opt //bench:wisdom_lookup_bench
//   bazel-bin/bench/wisdom_lookup_bench --wisdom FILE --reps 9
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/json.h"
#include "engine/records.h"
#include "engine/wisdom.h"
#include "storage/tuning_db.h"

namespace {

template <typename F>
double MedianMs(int reps, F fn) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  int reps = 9;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--wisdom")) path = argv[i + 1];
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::string last = text.substr(0, text.size() - 1);
  last = last.substr(last.rfind('\n') + 1);
  meshtune::v1::Record r;
  if (!meshtune::base::FromJson(last, &r).ok()) return 2;
  meshtune::v1::LookupRequest q;
  *q.mutable_problem() = r.problem();
  const std::string wm = r.workload_mesh();
  if (wm.rfind("ranks=", 0) == 0) {
    q.set_ranks(std::atoi(wm.c_str() + 6));
  } else {
    q.mutable_mesh()->set_axes(wm);
  }
  q.set_profile(r.profile());
  const int lines = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  bool ok = true;
  const double scan =
      MedianMs(reps, [&] { ok = ok && meshtune::engine::LookupWisdom(text, q).ok(); });
  const double import = MedianMs(reps, [&] {
    std::unique_ptr<meshtune::storage::TuningDb> db = meshtune::storage::NewInMemoryTuningDb();
    ok = ok && meshtune::engine::ImportWisdom(*db, text).ok() &&
         meshtune::engine::Lookup(*db, q).ok();
  });
  std::printf("%d lines, %zu bytes: LookupWisdom %.3f ms, ImportWisdom + Lookup %.3f ms%s\n", lines,
              text.size(), scan, import, ok ? "" : " (a lookup FAILED)");
  return ok ? 0 : 1;
}
