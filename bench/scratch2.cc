#include <chrono>
#include <fstream>
#include <sstream>
#include <iostream>
#include "ir/verdict.h"
#include "ir/legality.h"
using namespace meshtune;
int main(int argc, char** argv) {
  auto p = ir::ParseProblem("C[m,n] += A[m,k] * B[k,n]", "m=512,n=1024,k=2048");
  auto m = ir::ParseMesh(argv[2]);
  std::ifstream in(argv[1]); std::stringstream ss; ss << in.rdbuf();
  auto t = ir::ParseTrace(ss.str());
  auto base = ir::Computation::Create(*p, *m);
  for (int i = 0; i < 3; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = ir::ReplayTrace(*base, *t);
    auto t1 = std::chrono::steady_clock::now();
    for (auto& name : p->Tensors()) {
      auto t2 = std::chrono::steady_clock::now();
      auto k = ir::CheckTensor(r.computation, name, false);
      auto t3 = std::chrono::steady_clock::now();
      std::cout << name << " " << std::chrono::duration<double>(t3-t2).count()*1000 << " ms " << k.access.size() << "\n";
    }
    std::cout << "replay " << std::chrono::duration<double>(t1-t0).count()*1000 << " ms\n";
  }
}
