/* An MPI application in C written to the extents-only contract of meshtune's C API
 * (meshtune/meshtune.h): each shard's array holds exactly the product of the extents
 * meshtune_plan_shard returns, indexed at its strides (meshtune_plan_shard_storage is asked
 * only to count the ragged shards, never to size an array), and it never opts in to provide
 * the storage. Built with AddressSanitizer (tests/BUILD), run on odd rank counts at shapes
 * whose blocks do not divide (ragged), in MESHTUNE_ESTIMATE mode:
 *
 *   plan_c_extents_app [guard|malloc]
 *
 * `guard` (the default) places each array at the very end of an mmap'd region followed by a
 * PROT_NONE page (and preceded by one; tests/guarded_array.h), so that a write one element
 * past it faults even from code ASan does not instrument (the library, OpenBLAS, MPI); the
 * inputs' pages are then made read-only, so that a write into an input faults too. `malloc`
 * takes each array from calloc at its exact size, for ASan's redzones. Each case is executed
 * twice and every shard that holds values is checked, on every rank, against a serial
 * reference the application computes itself from the statements (the outputs' new values,
 * the inputs' unchanged). Rank 0 prints a line per case ("case N: EXPR (EXTENTS, DTYPE) on
 * MESH verified, ragged shards R", R the shards over all ranks whose storage is larger than
 * their extents) and "c extents app: K cases verified on P ranks (HOW)"; exit 0 when
 * every case verified. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshtune/meshtune.h"
#include "tests/guarded_array.h"

enum { kMaxTensors = 8, kMaxDims = 8, kMaxStatements = 4 };

/* One statement OUT[oi] (+)= A[ai] * B[bi]; indices are single letters. */
typedef struct {
  char out[8], a[8], b[8];
  char oi[kMaxDims + 1], ai[kMaxDims + 1], bi[kMaxDims + 1];
  int accumulate;
} Statement;

typedef struct {
  const char *expr, *extents, *dtype;
} Case;

/* The ragged shapes: no extent a multiple of 3, 5 or 7 but where noted; the first is the
 * GEMM of the report (m=300, n=200, k=100), whose last rank of 3 holds a short block. */
static const Case kCases[] = {
    {"C[m,n] += A[m,k] * B[k,n]", "m=300,n=200,k=100", "f32"},
    {"C[m,n] += A[m,k] * B[k,n]", "m=38,n=29,k=22", "f32"},
    {"C[m,n] = A[m,k] * B[k,n]", "m=11,n=9,k=13", "f64"},
    {"C[i,j] += A[k,i] * B[j,k]", "i=19,j=31,k=10", "f64"},
    {"y[i] += M[i,j] * x[j]", "i=34,j=17", "f32"},
    {"H[b,f] = X[b,d] * W1[d,f]; Y[b,e] = H[b,f] * W2[f,e]", "b=13,d=5,e=3,f=11", "f32"},
};

/* A whole tensor of the serial reference. */
typedef struct {
  char name[8], idx[kMaxDims + 1];
  int dims;
  long shape[kMaxDims], elements;
  double* values;
} Whole;

static int g_guard = 1; /* guard pages, else malloc (tests/guarded_array.h) */

static double value(const char* name, long linear) {
  long h = ((name[0] * 5 + (name[1] ? name[1] : 0)) * 7 + linear * 3) * 7 + linear % 13;
  return (double)(((h % 11) + 11) % 11 - 5) / 4.0;
}

/* "NAME[i,j]" at *p into name and idx; 0 on a parse error. */
static int parse_access(const char** p, char* name, char* idx) {
  int n = 0, d = 0;
  while (**p == ' ') ++*p;
  while (**p && **p != '[' && n < 7) name[n++] = *(*p)++;
  name[n] = 0;
  if (*(*p)++ != '[') return 0;
  while (**p && **p != ']' && d < kMaxDims) {
    if (**p != ',') idx[d++] = **p;
    ++*p;
  }
  idx[d] = 0;
  return *(*p)++ == ']';
}

/* The statements of `expr` into s; their number, or 0 on a parse error. */
static int parse_statements(const char* expr, Statement* s) {
  int n = 0;
  const char* p = expr;
  while (*p && n < kMaxStatements) {
    Statement* st = &s[n];
    if (!parse_access(&p, st->out, st->oi)) return 0;
    while (*p == ' ') ++p;
    st->accumulate = *p == '+';
    p += st->accumulate ? 2 : 1;
    if (!parse_access(&p, st->a, st->ai)) return 0;
    while (*p == ' ' || *p == '*') ++p;
    if (!parse_access(&p, st->b, st->bi)) return 0;
    ++n;
    while (*p == ' ' || *p == ';') ++p;
  }
  return n;
}

static long extent_of(const char* extents, char index) {
  for (const char* p = extents; *p; ++p) {
    if (*p == index && p[1] == '=' && (p == extents || p[-1] == ',')) return atol(p + 2);
  }
  return -1;
}

static Whole* find_whole(Whole* w, int n, const char* name) {
  for (int t = 0; t < n; ++t) {
    if (strcmp(w[t].name, name) == 0) return &w[t];
  }
  return NULL;
}

/* Adds tensor `name` with indices `idx` to the reference, once; its initial values. */
static void add_whole(Whole* w, int* n, const char* name, const char* idx, const char* extents) {
  if (find_whole(w, *n, name) != NULL) return;
  Whole* t = &w[(*n)++];
  strcpy(t->name, name);
  strcpy(t->idx, idx);
  t->dims = (int)strlen(idx);
  t->elements = 1;
  for (int d = 0; d < t->dims; ++d) {
    t->shape[d] = extent_of(extents, idx[d]);
    t->elements *= t->shape[d];
  }
  t->values = malloc(sizeof(double) * (size_t)t->elements);
  for (long i = 0; i < t->elements; ++i) t->values[i] = value(name, i);
}

/* The row-major linear index into `t` of the point `at` (one value per letter a..z). */
static long linear_of(const Whole* t, const long* at) {
  long l = 0;
  for (int d = 0; d < t->dims; ++d) l = l * t->shape[d] + at[t->idx[d] - 'a'];
  return l;
}

/* Runs statement `s` on the reference once. */
static void apply(const Statement* s, Whole* w, int n, const char* extents) {
  Whole *o = find_whole(w, n, s->out), *a = find_whole(w, n, s->a), *b = find_whole(w, n, s->b);
  char letters[27] = {0};
  int count = 0;
  for (const char* p = s->oi; *p; ++p) letters[count++] = *p;
  for (const char* p = s->ai; *p; ++p) {
    if (strchr(letters, *p) == NULL) letters[count++] = *p;
  }
  for (const char* p = s->bi; *p; ++p) {
    if (strchr(letters, *p) == NULL) letters[count++] = *p;
  }
  if (!s->accumulate) memset(o->values, 0, sizeof(double) * (size_t)o->elements);
  long at[26] = {0}, limit[26];
  for (int i = 0; i < count; ++i) limit[i] = extent_of(extents, letters[i]);
  for (;;) {
    o->values[linear_of(o, at)] += a->values[linear_of(a, at)] * b->values[linear_of(b, at)];
    int i = count - 1;
    while (i >= 0 && ++at[letters[i] - 'a'] == limit[i]) at[letters[i--] - 'a'] = 0;
    if (i < 0) return;
  }
}

/* Whether tensor `name` is written by one of the statements. */
static int written(const Statement* s, int n, const char* name) {
  for (int i = 0; i < n; ++i) {
    if (strcmp(s[i].out, name) == 0) return 1;
  }
  return 0;
}

static double element(const void* data, int f64, long at) {
  return f64 ? ((const double*)data)[at] : ((const float*)data)[at];
}

/* The plan's shard of one tensor as this application holds it. */
typedef struct {
  int dims;
  int64_t start[kMaxDims], extents[kMaxDims], strides[kMaxDims];
  long elements;
  GuardedArray array;
} Shard;

/* Every element `s` holds: with `fill`, set in `data` from the reference `w`; otherwise
 * compared with it. Returns the number of elements that differ. */
static long each_held(const Shard* s, const Whole* w, void* data, int f64, int fill) {
  long wrong = 0, local[kMaxDims] = {0};
  if (s->elements == 0) return 0;
  for (;;) {
    long at = 0, g = 0;
    for (int d = 0; d < s->dims; ++d) {
      at += local[d] * s->strides[d];
      g = g * w->shape[d] + s->start[d] + local[d];
    }
    if (fill && f64) ((double*)data)[at] = w->values[g];
    if (fill && !f64) ((float*)data)[at] = (float)w->values[g];
    if (!fill && fabs(element(data, f64, at) - w->values[g]) > 1e-3 * (1 + fabs(w->values[g])))
      ++wrong;
    int d = s->dims - 1;
    while (d >= 0 && ++local[d] == s->extents[d]) local[d--] = 0;
    if (d < 0) return wrong;
  }
}

/* Reads tensor t's shard, checks that its strides are the extents' (dense, row-major), and
 * allocates its array at exactly the extents; 0 when the layout is not as the contract says. */
static int take_shard(const meshtune_plan* plan, const char* name, size_t item, Shard* s,
                      int* ragged) {
  int64_t storage[kMaxDims];
  s->dims = meshtune_plan_shard(plan, name, s->start, s->extents, s->strides);
  if (s->dims < 0 || meshtune_plan_shard_storage(plan, name, storage) != s->dims) return 0;
  long stride = 1, stored = 1;
  s->elements = 1;
  for (int d = s->dims - 1; d >= 0; --d) {
    if (s->extents[d] > 1 && s->strides[d] != stride) return 0;
    stride *= s->extents[d];
    s->elements *= s->extents[d];
    stored *= storage[d]; /* only counted: never allocated */
  }
  if (stored > s->elements) ++*ragged;
  s->array = guarded_array(item * (size_t)s->elements, g_guard);
  return 1;
}

/* Plans, runs twice and checks case `c`; 0 when verified. */
static int run_case(int number, const Case* c, int rank) {
  Statement st[kMaxStatements];
  Whole whole[kMaxTensors];
  int statements = parse_statements(c->expr, st), wholes = 0, bad = 0, any = 0, ragged = 0;
  for (int i = 0; i < statements; ++i) {
    add_whole(whole, &wholes, st[i].out, st[i].oi, c->extents);
    add_whole(whole, &wholes, st[i].a, st[i].ai, c->extents);
    add_whole(whole, &wholes, st[i].b, st[i].bi, c->extents);
  }
  meshtune_plan* plan = NULL;
  if (statements == 0 || meshtune_plan_create(c->expr, c->extents, c->dtype, MPI_COMM_WORLD,
                                              MESHTUNE_ESTIMATE, NULL, NULL, &plan) != 0) {
    if (rank == 0) printf("case %d: %s: error: %s\n", number, c->expr, meshtune_last_error());
    return 1;
  }
  const int n = meshtune_plan_num_tensors(plan), f64 = strcmp(c->dtype, "f64") == 0;
  Shard shard[kMaxTensors];
  void* pointers[kMaxTensors];
  Whole* of[kMaxTensors];
  memset(shard, 0, sizeof(shard));
  for (int t = 0; t < n; ++t) {
    const char* name = meshtune_plan_tensor(plan, t);
    of[t] = find_whole(whole, wholes, name);
    if (of[t] == NULL || !take_shard(plan, name, f64 ? 8 : 4, &shard[t], &ragged)) {
      bad = 1;
      pointers[t] = NULL;
      continue;
    }
    pointers[t] = shard[t].array.data;
    each_held(&shard[t], of[t], pointers[t], f64, /*fill=*/1);
    if (!written(st, statements, name)) guarded_array_freeze(&shard[t].array);
  }
  /* Every rank runs (a collective) or none: the shards' layouts agreed first. */
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  for (int call = 1; call <= 2 && !any; ++call) {
    if (meshtune_plan_execute(plan, pointers) != 0) bad = 1;
    for (int i = 0; i < statements; ++i) apply(&st[i], whole, wholes, c->extents);
    /* Every shard that holds values: the outputs' the reference's, the inputs' unchanged. */
    for (int t = 0; t < n; ++t) {
      if (meshtune_plan_holds(plan, meshtune_plan_tensor(plan, t)) != 1) continue;
      if (each_held(&shard[t], of[t], pointers[t], f64, /*fill=*/0) > 0) bad = 1;
    }
  }
  int ragged_all = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&ragged, &ragged_all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("case %d: %s (%s, %s) on %s %s, ragged shards %d\n", number, c->expr, c->extents,
           c->dtype, meshtune_plan_mesh(plan), any ? "MISMATCH" : "verified", ragged_all);
  }
  for (int t = 0; t < n; ++t) guarded_array_free(&shard[t].array);
  for (int t = 0; t < wholes; ++t) free(whole[t].values);
  meshtune_plan_destroy(plan);
  return any;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, failed = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  g_guard = !(argc > 1 && strcmp(argv[1], "malloc") == 0);
  const int cases = (int)(sizeof(kCases) / sizeof(kCases[0]));
  for (int c = 0; c < cases; ++c) failed += run_case(c, &kCases[c], rank);
  if (rank == 0) {
    printf("c extents app: %d cases verified on %d ranks (%s)\n", cases - failed, size,
           g_guard ? "guard pages" : "malloc");
  }
  MPI_Finalize();
  return failed > 0;
}
