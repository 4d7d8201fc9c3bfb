#include "base/excerpt.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace meshtune::base {
namespace {

TEST(ExcerptTest, ShortTextIsUnchanged) {
  EXPECT_EQ(Excerpt("C[m,n] += A[m,k] * B[k,n]"), "C[m,n] += A[m,k] * B[k,n]");
  EXPECT_EQ(Excerpt(std::string(80, 'a')), std::string(80, 'a'));
  EXPECT_EQ(Excerpt(""), "");
}

TEST(ExcerptTest, LongTextKeepsItsStartAndEnd) {
  const std::string long_text = std::string(30000, 'a') + "END";
  const std::string e = Excerpt(long_text);
  EXPECT_EQ(e.size(), 80u);
  EXPECT_EQ(e.substr(0, 58), std::string(58, 'a'));
  EXPECT_EQ(e.substr(58, 3), "...");
  EXPECT_EQ(e.substr(e.size() - 3), "END");
  EXPECT_EQ(Excerpt("0123456789abcdefghij", 10), "012345...j");
}

TEST(ExcerptTest, NonPrintableBytesAreEscaped) {
  EXPECT_EQ(Excerpt("a\nb\x1b[31m\xC3\xA9\t\r"), "a\\nb\\x1B[31m\\xC3\\xA9\\t\\r");
}

TEST(ExcerptTest, ListsStayShort) {
  EXPECT_EQ(ExcerptList({"x", "y", "z"}), "x, y, z");
  std::vector<std::string> many(1000, "loop_name");
  const std::string list = ExcerptList(many);
  EXPECT_LE(list.size(), 2 * kMaxExcerpt + 5);
  EXPECT_EQ(list.substr(list.size() - 5), ", ...");
  EXPECT_EQ(ExcerptList({std::string(500, 'q')}).size(), kMaxExcerpt);
}

}  // namespace
}  // namespace meshtune::base
