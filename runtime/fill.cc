#include "runtime/fill.h"

namespace meshtune::runtime {

namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

double ElementValue(uint64_t seed, const std::string& tensor, int64_t index) {
  uint64_t h = SplitMix64(seed);
  for (unsigned char c : tensor) h = SplitMix64(h ^ c);
  h = SplitMix64(h ^ static_cast<uint64_t>(index));
  // 24 bits: exactly representable in f32, so every rank and the reference agree.
  return static_cast<double>(h >> 40) / static_cast<double>(1 << 23) - 1.0;
}

}  // namespace meshtune::runtime
