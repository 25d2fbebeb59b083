// The counter registry: one row per counter, sorted and unique, found by its name or by the
// prefix of a "prefix:detail" name.
#include "fr/model/counters.h"

#include <string>

#include "gtest/gtest.h"

namespace fr {
namespace {

TEST(CountersTest, TableIsSortedUniqueAndDescribed) {
  std::span<const CounterInfo> all = AllCounters();
  ASSERT_GT(all.size(), 10u);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_FALSE(all[i].description.empty()) << all[i].name;
    EXPECT_EQ(all[i].name.find(':'), std::string_view::npos) << all[i].name;
    if (i > 0) {
      EXPECT_LT(all[i - 1].name, all[i].name);
    }
  }
}

TEST(CountersTest, NamesWithADetailAreFoundByTheirPrefix) {
  const CounterInfo* info = FindCounter("unknown_entry_key:new_field_of_2_11");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->name, "unknown_entry_key");
  EXPECT_EQ(FindCounter("files_rejected")->severity, CounterSeverity::kError);
  EXPECT_EQ(FindCounter("entry_without_profiling_name")->severity, CounterSeverity::kDataLoss);
  EXPECT_EQ(FindCounter("no_such_counter"), nullptr);
  EXPECT_EQ(CounterSeverityName(CounterSeverity::kDataLoss), "data_loss");
}

}  // namespace
}  // namespace fr
