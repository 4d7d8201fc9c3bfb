// Early-return helpers for absl::Status / absl::StatusOr, used across meshtune.
//   MT_RETURN_IF_ERROR(DoThing());
//   MT_ASSIGN_OR_RETURN(Foo foo, MakeFoo());   // also: MT_ASSIGN_OR_RETURN(x.field, ...)
#ifndef MESHTUNE_BASE_STATUS_MACROS_H_
#define MESHTUNE_BASE_STATUS_MACROS_H_

#include <utility>

#define MT_STATUS_CONCAT_INNER(a, b) a##b
#define MT_STATUS_CONCAT(a, b) MT_STATUS_CONCAT_INNER(a, b)

#define MT_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::absl::Status mt_status_ = (expr);      \
    if (!mt_status_.ok()) return mt_status_; \
  } while (0)

#define MT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = *std::move(tmp)

#define MT_ASSIGN_OR_RETURN(lhs, expr) \
  MT_ASSIGN_OR_RETURN_IMPL(MT_STATUS_CONCAT(mt_statusor_, __LINE__), lhs, expr)

#endif  // MESHTUNE_BASE_STATUS_MACROS_H_
