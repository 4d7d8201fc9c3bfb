// emitted_library_gen: the program `meshtune codegen --main` writes for a record whose answer
// is the library, made at build time by engine::Codegen from a CodegenRequest with `library`
// set (what engine::ResolveCodegenRequest copies from the record), for
// tests/emitted_library_test.cc to run under mpirun.
//   emitted_library_gen --expr E --extents X [--dtype f32] [--mesh x=2,y=2]
//                       --library PSGEMM --prow P --pcol Q --nb NB -o OUT.cc
// Exits 1 with engine::Codegen's message on stderr when it refuses the request.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "engine/codegen.h"
#include "proto/meshtune.pb.h"

int main(int argc, char** argv) {
  meshtune::v1::CodegenRequest request;
  request.set_main(true);
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--expr") {
      request.mutable_problem()->set_expr(value);
    } else if (flag == "--extents") {
      request.mutable_problem()->set_extents(value);
    } else if (flag == "--dtype") {
      request.mutable_problem()->set_dtype(value);
    } else if (flag == "--mesh") {
      request.mutable_mesh()->set_axes(value);
    } else if (flag == "--library") {
      request.mutable_library()->set_library(value);
    } else if (flag == "--prow") {
      request.mutable_library()->set_prow(std::atoi(value.c_str()));
    } else if (flag == "--pcol") {
      request.mutable_library()->set_pcol(std::atoi(value.c_str()));
    } else if (flag == "--nb") {
      request.mutable_library()->set_nb(std::atoi(value.c_str()));
    } else if (flag == "-o") {
      out = value;
    } else {
      std::fprintf(stderr, "emitted_library_gen: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (out.empty() || !request.has_library()) {
    std::fprintf(stderr, "emitted_library_gen: give -o OUT and the library (--prow ...)\n");
    return 2;
  }
  const absl::StatusOr<meshtune::v1::CodegenResponse> response = meshtune::engine::Codegen(request);
  if (!response.ok()) {
    std::fprintf(stderr, "emitted_library_gen: %s\n",
                 std::string(response.status().message()).c_str());
    return 1;
  }
  std::ofstream file(out);
  file << response->source();
  return file.good() ? 0 : 1;
}
