#include "fr/model/entry_store.h"

#include <bit>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "fr/model/rank_dump.h"
#include "fr/model/rank_dump_equal.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

// A dump holding `entries`, twice: one left as built, one packed; "" when they read the same.
std::string PackedDifference(const std::vector<Entry>& entries) {
  RankDump built, packed;
  for (const Entry& entry : entries) {
    built.entries.push_back(entry);
    packed.entries.push_back(entry);
  }
  packed.entries.Pack();
  EXPECT_TRUE(packed.entries.packed());
  EXPECT_EQ(packed.entries.size(), entries.size());
  return DescribeRankDumpDifference(built, packed);
}

// Bytes the packed rows of `entries` take: what a packed store holds beyond an empty one (the
// layout and padding).
size_t PackedRowBytes(const std::vector<Entry>& entries) {
  EntryStore store;
  store.assign(entries.begin(), entries.end());
  store.Pack();
  EntryStore empty;
  empty.Pack();
  return store.MemoryBytes() - empty.MemoryBytes();
}

// What a healthy rank's ring buffer looks like: counters that count up, one timeout and thread
// per group, a handful of ops and shapes, timestamps of a job running for an hour.
std::vector<Entry> RingBufferLikeTorchWrites(int count) {
  std::vector<Entry> entries;
  const int64_t start_ns = 1'764'000'000'000'000'000;
  for (int i = 0; i < count; ++i) {
    Entry e;
    e.record_id = 48'000 + i;
    e.group = static_cast<uint32_t>(i % 3);
    e.pg_id = e.group;
    e.collective_seq_id = 16'000 + i / 3;
    e.p2p_seq_id = i % 3 == 2 ? 900 + i / 3 : 0;
    e.op_id = e.collective_seq_id + e.p2p_seq_id;
    e.time_created_ns = start_ns + int64_t{i} * 1'800'000'000;
    bool last = i >= count - 3;
    e.state = last ? EntryState::kScheduled : EntryState::kCompleted;
    e.time_discovered_started_ns = last ? kUnknown : e.time_created_ns + 40'000 + i;
    e.time_discovered_completed_ns = last ? kUnknown : e.time_created_ns + 9'000'000 + 7 * i;
    e.timeout_ms = 600'000;
    e.peer_rank = i % 3 == 2 ? 17 : kUnknown;
    e.op = i % 3 == 2 ? OpKind::kSend : OpKind::kAllReduce;
    e.is_p2p = i % 3 == 2;
    e.retired = !last;
    e.profiling_name = 1 + i % 3;
    e.backend = 4;
    e.op_name = 5 + i % 3;
    e.thread_name = 9;
    e.thread_id = 10;
    e.input_sizes = e.output_sizes = static_cast<ShapeListId>(i % 5);
    e.input_dtypes = e.output_dtypes = 1;
    e.stack = i % 7 == 0 ? kNoStack : static_cast<StackId>(i % 40);
    entries.push_back(e);
  }
  return entries;
}

TEST(EntryStoreTest, PackedEntriesReadBackExactlyAndTakeAQuarterOfTheSpace) {
  std::vector<Entry> entries = RingBufferLikeTorchWrites(2000);
  EXPECT_EQ(PackedDifference(entries), "");

  EntryStore store;
  for (const Entry& entry : entries) store.push_back(entry);
  size_t built_bytes = entries.size() * sizeof(Entry);
  store.Pack();
  EXPECT_LE(store.MemoryBytes() * 4, built_bytes);
  // Iteration, front and back decode the same rows as indexing.
  size_t i = 0;
  for (const Entry& entry : store) {
    EXPECT_EQ(entry.record_id, entries[i].record_id);
    EXPECT_EQ(entry.time_discovered_completed_ns, entries[i].time_discovered_completed_ns);
    ++i;
  }
  EXPECT_EQ(i, entries.size());
  EXPECT_EQ(store.front().record_id, 48'000);
  EXPECT_EQ(store.back().state, EntryState::kScheduled);
  EXPECT_EQ(store.back().time_discovered_started_ns, kUnknown);
  EXPECT_EQ(store.end() - store.begin(), 2000);
}

TEST(EntryStoreTest, ExtremeAndHostileValuesSurvive) {
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const uint32_t kMaxId = std::numeric_limits<uint32_t>::max();
  const std::vector<int64_t> wide = {kMin, kMin + 1, -2, kUnknown, 0, 1, kMax - 1, kMax};
  const std::vector<double> durations = {std::numeric_limits<double>::quiet_NaN(),
                                         -std::numeric_limits<double>::quiet_NaN(),
                                         std::bit_cast<double>(uint64_t{0x7ff8'dead'beef'0001}),
                                         0.0,
                                         -0.0,
                                         1e-300,
                                         std::numeric_limits<double>::infinity(),
                                         -std::numeric_limits<double>::infinity(),
                                         12.5};
  std::mt19937_64 random(20261202);
  for (int round = 0; round < 200; ++round) {
    // Each round draws its rows from a few values per field, so that some columns are constant,
    // some mix the special value with a narrow range, and some span everything.
    std::vector<Entry> entries(1 + random() % 40);
    const int spread = 1 + static_cast<int>(random() % wide.size());
    auto pick = [&] { return wide[random() % spread]; };
    auto pick_id = [&]() -> uint32_t {
      switch (random() % 4) {
        case 0:
          return kMaxId;
        case 1:
          return 0;
        default:
          return static_cast<uint32_t>(random() % (round % 2 ? 300 : kMaxId));
      }
    };
    for (Entry& e : entries) {
      e.record_id = pick();
      e.pg_id = pick();
      e.collective_seq_id = pick();
      e.p2p_seq_id = pick();
      e.op_id = static_cast<int64_t>(random());
      e.time_created_ns = pick();
      e.time_discovered_started_ns = pick();
      e.time_discovered_completed_ns = pick();
      e.timeout_ms = pick();
      e.duration_ms = durations[random() % durations.size()];
      e.peer_rank = pick();
      e.group = pick_id();
      e.profiling_name = pick_id();
      e.backend = pick_id();
      e.op_name = pick_id();
      e.thread_name = pick_id();
      e.thread_id = pick_id();
      e.input_sizes = pick_id();
      e.output_sizes = pick_id();
      e.input_dtypes = pick_id();
      e.output_dtypes = pick_id();
      e.stack = pick_id();
      e.op = static_cast<OpKind>(random() % 256);
      e.state = static_cast<EntryState>(random() % 4);
      e.retired = random() % 2;
      e.is_p2p = random() % 2;
      e.state_from_batch = random() % 2;
    }
    ASSERT_EQ(PackedDifference(entries), "") << "round " << round;
  }
}

TEST(EntryStoreTest, FieldsThatNeverChangeTakeNoSpace) {
  // Identical entries but for the record id, which counts up by one as PyTorch's does.
  std::vector<Entry> entries(1000, RingBufferLikeTorchWrites(1)[0]);
  for (size_t i = 0; i < entries.size(); ++i) entries[i].record_id = 700 + i;
  // Every column is constant: the rows are empty, only the layout and padding are left.
  EXPECT_EQ(PackedRowBytes(entries), 0u);
  EXPECT_EQ(PackedDifference(entries), "");
}

TEST(EntryStoreTest, UnknownMixedWithANarrowRangeStaysNarrow) {
  // Completion times 1..200 ns after a base, with half the entries never completed (-1): the
  // special value must not widen the column to the full distance between -1 and the base.
  std::vector<Entry> entries(400);
  for (size_t i = 0; i < entries.size(); ++i) {
    entries[i].record_id = static_cast<int64_t>(i);
    entries[i].time_discovered_completed_ns =
        i % 2 ? kUnknown : 1'764'000'000'000'000'000 + static_cast<int64_t>(i);
  }
  // Two bytes a row would hold 400 codes; the full distance would need eight.
  EXPECT_EQ(PackedRowBytes(entries), entries.size() * 2);
  EXPECT_EQ(PackedDifference(entries), "");
}

TEST(EntryStoreTest, StartAndCompletionTakeTheBytesOfAWaitNotOfTheJobsSpan) {
  // An hour of ops, 2 s apart: the enqueue times need six bytes, but each op started within
  // 100 us of its enqueue and completed within 10 ms: three bytes each, not six.
  std::vector<Entry> entries(1800);
  for (size_t i = 0; i < entries.size(); ++i) {
    Entry& e = entries[i];
    e.record_id = static_cast<int64_t>(i);
    e.time_created_ns = 1'764'000'000'000'000'000 + static_cast<int64_t>(i) * 2'000'000'000;
    e.time_discovered_started_ns = e.time_created_ns + static_cast<int64_t>(i % 97) * 1000;
    e.time_discovered_completed_ns =
        e.time_discovered_started_ns + static_cast<int64_t>(i % 89) * 100'000;
  }
  EXPECT_EQ(PackedRowBytes(entries), entries.size() * (6 + 3 + 3));
  EXPECT_EQ(PackedDifference(entries), "");
  // Unknown times, and a start exactly 1 ns before the enqueue (whose offset is the special
  // value), still read back as they were.
  entries[3].time_discovered_started_ns = kUnknown;
  entries[4].time_discovered_started_ns = entries[4].time_created_ns - 1;
  entries[5].time_discovered_completed_ns = entries[5].time_created_ns - 1;
  entries[6].time_discovered_completed_ns = kUnknown;
  EXPECT_EQ(PackedDifference(entries), "");
}

TEST(EntryStoreTest, DurationsRecordedAsFloatsTakeFourBytes) {
  // PyTorch keeps duration_ms as a float; the dump widens it to a double. Some ops never
  // completed and have none (NaN).
  std::vector<Entry> entries(300);
  for (size_t i = 0; i < entries.size(); ++i) {
    entries[i].record_id = static_cast<int64_t>(i);
    entries[i].duration_ms = i % 3 ? static_cast<float>(0.37 * i + 1e-3 * (i % 7))
                                   : std::numeric_limits<double>::quiet_NaN();
  }
  EXPECT_LE(PackedRowBytes(entries), entries.size() * 4);
  EXPECT_EQ(PackedDifference(entries), "");
  // One duration that is no float's value: all of them keep their double bits, exactly.
  entries[7].duration_ms = 0.1;
  EXPECT_EQ(PackedDifference(entries), "");
}

TEST(EntryStoreTest, EmptyAndSingleEntryStores) {
  EXPECT_EQ(PackedDifference({}), "");
  EXPECT_EQ(PackedDifference(RingBufferLikeTorchWrites(1)), "");
  EntryStore store;
  store.Pack();
  EXPECT_TRUE(store.empty());
  EXPECT_TRUE(store.begin() == store.end());
}

TEST(EntryStoreTest, ClearMakesAPackedStoreBuildableAgain) {
  EntryStore store;
  store.push_back(RingBufferLikeTorchWrites(1)[0]);
  store.Pack();
  store.Pack();  // idempotent
  EXPECT_EQ(store.size(), 1u);
  store.clear();
  EXPECT_FALSE(store.packed());
  EXPECT_TRUE(store.empty());
  store.emplace_back().collective_seq_id = 3;
  store.mutable_entry(0).p2p_seq_id = 4;
  EXPECT_EQ(store[0].collective_seq_id, 3);
  EXPECT_EQ(store[0].p2p_seq_id, 4);
}

TEST(EntryStoreDeathTest, BuildingOnAPackedStoreAborts) {
  EntryStore store;
  store.push_back(Entry{});
  store.Pack();
  EXPECT_DEATH(store.emplace_back(), "building on a packed store");
  EXPECT_DEATH(store.mutable_entry(0), "building on a packed store");
}

}  // namespace
}  // namespace fr
