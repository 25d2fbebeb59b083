// The one classifier of entry keys that both readers use (entry_keys.h).
#include "fr/normalize/entry_keys.h"

#include <initializer_list>
#include <set>
#include <string>

#include "gtest/gtest.h"

namespace fr {
namespace {

TEST(EntryKeysTest, EveryKeyOfA2xEntryIsAField) {
  // The keys PyTorch 2.10 writes in every entry (docs/dump-format.md, "Entries").
  std::set<EntryField> seen;
  for (std::string key : {"frames",
                          "record_id",
                          "pg_id",
                          "process_group",
                          "thread_name",
                          "thread_id",
                          "collective_seq_id",
                          "p2p_seq_id",
                          "op_id",
                          "profiling_name",
                          "time_created_ns",
                          "duration_ms",
                          "input_sizes",
                          "input_dtypes",
                          "output_sizes",
                          "output_dtypes",
                          "state",
                          "time_discovered_started_ns",
                          "time_discovered_completed_ns",
                          "retired",
                          "timeout_ms",
                          "is_p2p"}) {
    EntryField field = ClassifyEntryKey(key);
    EXPECT_NE(field, EntryField::kUnknown) << key;
    EXPECT_FALSE(IsLegacyEntryKey(field)) << key;
    EXPECT_TRUE(seen.insert(field).second) << key << " shares a field with another key";
  }
}

TEST(EntryKeysTest, OldNamesAreKnownAndMarkedLegacy) {
  EXPECT_EQ(ClassifyEntryKey("seq_id"), EntryField::kSeqId);
  EXPECT_EQ(ClassifyEntryKey("time_created_us"), EntryField::kTimeCreatedUs);
  EXPECT_TRUE(IsLegacyEntryKey(EntryField::kSeqId));
  EXPECT_TRUE(IsLegacyEntryKey(EntryField::kTimeCreatedUs));
}

TEST(EntryKeysTest, AnythingElseIsUnknown) {
  for (std::string key : std::initializer_list<std::string>{
           "", "state ", "State", "time_created", "time_created_ms", "frame",
           std::string("pg_id\0", 6), "collective_seq_id_"}) {
    EXPECT_EQ(ClassifyEntryKey(key), EntryField::kUnknown) << key;
  }
}

}  // namespace
}  // namespace fr
