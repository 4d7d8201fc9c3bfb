// CHECK for internal invariants (never for user input, which gets an absl::Status).
// A failed CHECK prints the condition, file and line, and aborts: it marks a bug.
#ifndef MESHTUNE_BASE_CHECK_H_
#define MESHTUNE_BASE_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define MT_CHECK(cond)                                                                      \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "%s:%d: internal error: CHECK(%s) failed\n", __FILE__, __LINE__, \
                   #cond);                                                                  \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)

#endif  // MESHTUNE_BASE_CHECK_H_
