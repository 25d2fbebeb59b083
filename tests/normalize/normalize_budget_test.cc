// The hostile-input budget: it scales with the input, has a floor, and says why it was exceeded.
#include "fr/normalize/normalize_budget.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::HasSubstr;

NormalizeLimits Limits() {
  NormalizeLimits limits;
  limits.kept_bytes_per_input_byte = 4;
  limits.min_kept_bytes = 100;
  limits.visits_per_input_byte = 2;
  limits.min_visits = 50;
  return limits;
}

TEST(NormalizeBudgetTest, ScalesWithTheInput) {
  NormalizeLimits limits = Limits();
  NormalizeBudget budget(limits, 1000);  // keep 4000 bytes, read 2000 values
  EXPECT_TRUE(budget.Keep(4000));
  EXPECT_TRUE(budget.Visit(2000));
  EXPECT_FALSE(budget.exceeded());
  EXPECT_FALSE(budget.Keep(1));
  EXPECT_TRUE(budget.exceeded());
  EXPECT_EQ(budget.cost().max_kept_bytes, 4000u);
}

TEST(NormalizeBudgetTest, ATinyInputGetsTheFloor) {
  NormalizeLimits limits = Limits();
  NormalizeBudget budget(limits, 1);
  EXPECT_TRUE(budget.Visit(50));
  EXPECT_FALSE(budget.Visit(1));
  EXPECT_THAT(budget.Describe(), HasSubstr("read more than 50 values"));
}

TEST(NormalizeBudgetTest, TextCostsOneVisitPerBlockOfBytes) {
  NormalizeLimits limits = Limits();
  NormalizeBudget budget(limits, 1);
  // 1 + 640 / 64 = 11 visits each: four fit in 50, the fifth does not.
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(budget.VisitText(640));
  EXPECT_FALSE(budget.VisitText(640));
}

TEST(NormalizeBudgetTest, AHugeInputDoesNotOverflow) {
  NormalizeLimits limits = Limits();
  NormalizeBudget budget(limits, UINT64_MAX / 2);
  EXPECT_TRUE(budget.Keep(uint64_t{1} << 62));
  EXPECT_THAT(NormalizeBudget(limits, 10).Describe(), HasSubstr("10-byte input"));
}

}  // namespace
}  // namespace fr
