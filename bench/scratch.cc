#include <chrono>
#include <iostream>
#include "search/explorer.h"
using namespace meshtune;
int main(int argc, char** argv) {
  auto p = ir::ParseProblem(argv[1], argv[2]);
  auto m = ir::ParseMesh(argv[3]);
  search::CostParams c; c.alpha=2e-6; c.beta=1e-9; c.alpha_coll=2e-6; c.beta_coll=1e-9; c.gamma=1e-10;
  auto t0 = std::chrono::steady_clock::now();
  auto e = search::Explorer::Create(*p, {*m}, {}, c);
  if (!e.ok()) { std::cerr << e.status() << "\n"; return 1; }
  auto t1 = std::chrono::steady_clock::now();
  auto& k = (*e)->counts();
  std::cout << "create " << std::chrono::duration<double>(t1-t0).count() << " s; enumerated " << k.enumerated << " legal " << k.legal << " nests " << (*e)->evaluator(0).space().nests().size() << "\n";
  for (auto& [r,n] : k.pruned) std::cout << "  " << r << " " << n << "\n";
  int n = 0; int limit = argc > 4 ? atoi(argv[4]) : 2000;
  (*e)->ForEachLegal([&](const search::Point& pt) { (*e)->Evaluate(pt); return ++n < limit; });
  auto t2 = std::chrono::steady_clock::now();
  std::cout << "evaluated " << n << " in " << std::chrono::duration<double>(t2-t1).count() << " s; costed " << k.costed << " dup " << k.duplicates << " unlowerable " << k.unlowerable << "\n";
  for (auto* c : (*e)->Best(3)) std::cout << c->cost.seconds << "\n" << c->trace << "\n";
}
