#include "fr/model/entry_store.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace fr {
namespace {

static_assert(std::bit_cast<uint64_t>(std::numeric_limits<double>::quiet_NaN()) ==
              0x7ff8'0000'0000'0000);
static_assert((static_cast<uint64_t>(kUnknown) ^ (uint64_t{1} << 63)) == 0x7fff'ffff'ffff'ffff);
static_assert(kNoStack == 0xffff'ffff && kNoString == 0xffff'ffff);

// Bytes that hold every value from 0 to `span`.
int BytesFor(uint64_t span) { return span == 0 ? 0 : (std::bit_width(span) + 7) / 8; }

// Whether every duration is a float's value (or the NaN that stands for none), bit for bit.
bool DurationsAreFloats(const EntryStore::Vector& entries) {
  const uint64_t none = std::bit_cast<uint64_t>(std::numeric_limits<double>::quiet_NaN());
  for (const Entry& entry : entries) {
    const uint64_t bits = std::bit_cast<uint64_t>(entry.duration_ms);
    if (bits == none) continue;
    const double back = static_cast<float>(entry.duration_ms);
    if (std::bit_cast<uint64_t>(back) != bits) return false;
  }
  return true;
}

}  // namespace

EntryStore::Row EntryStore::ColumnsOf(const Entry& e, size_t i, bool durations_as_float) {
  Row row;
  // Modulo 2^64, as the reader adds it back: lossless for any record id.
  row[kRecordId] = FromSigned(e.record_id) - i;
  row[kPgId] = FromSigned(e.pg_id);
  row[kCollectiveSeqId] = FromSigned(e.collective_seq_id);
  row[kP2pSeqId] = FromSigned(e.p2p_seq_id);
  row[kOpId] = FromSigned(e.op_id);
  row[kTimeCreated] = FromSigned(e.time_created_ns);
  // Start and completion as offsets from the enqueue (a queue wait, an op's duration: a few bytes
  // where the times themselves need five or more). kUnknown stays the column's special value; a
  // time exactly 1 ns before the enqueue, whose offset would read as that, sets a flag instead.
  bool started_at_minus_one = false, completed_at_minus_one = false;
  row[kTimeStarted] =
      TimeOffset(e.time_discovered_started_ns, e.time_created_ns, &started_at_minus_one);
  row[kTimeCompleted] =
      TimeOffset(e.time_discovered_completed_ns, e.time_created_ns, &completed_at_minus_one);
  row[kTimeoutMs] = FromSigned(e.timeout_ms);
  row[kDurationMs] = std::bit_cast<uint64_t>(e.duration_ms);
  if (durations_as_float && row[kDurationMs] != SpecialOf(kDurationMs)) {
    row[kDurationMs] = std::bit_cast<uint32_t>(static_cast<float>(e.duration_ms));
  }
  row[kPeerRank] = FromSigned(e.peer_rank);
  row[kGroup] = e.group;
  row[kProfilingName] = e.profiling_name;
  row[kBackend] = e.backend;
  row[kOpName] = e.op_name;
  row[kThreadName] = e.thread_name;
  row[kThreadId] = e.thread_id;
  row[kInputSizes] = e.input_sizes;
  row[kOutputSizes] = e.output_sizes;
  row[kInputDtypes] = e.input_dtypes;
  row[kOutputDtypes] = e.output_dtypes;
  row[kStack] = e.stack;
  const uint64_t op = static_cast<uint8_t>(e.op);
  const uint64_t state = static_cast<uint8_t>(e.state);
  row[kFlags] = uint64_t{e.retired} | uint64_t{e.is_p2p} << 1 | uint64_t{e.state_from_batch} << 2 |
                (state & 0x3) << 3 | (op & 0x1f) << 5 | uint64_t{started_at_minus_one} << 10 |
                uint64_t{completed_at_minus_one} << 11 | (state & 0xfc) << 14 | (op & 0xe0) << 17;
  return row;
}

EntryStore::Vector& EntryStore::Open() {
  if (packed_ != nullptr) {
    // A programming error, not bad input: nothing may edit a dump after the loader kept it.
    std::fputs("fr::EntryStore: building on a packed store\n", stderr);
    std::abort();
  }
  return open_;
}

void EntryStore::clear() {
  Vector().swap(open_);
  packed_.reset();
}

void EntryStore::Pack() {
  if (packed_ != nullptr) return;
  auto layout = std::make_unique<Layout>();
  const size_t count = open_.size();
  layout->durations_as_float = DurationsAreFloats(open_);
  // Per column: the range of all values, and of the values other than its special one.
  Row low, high, low_plain, high_plain;
  low.fill(std::numeric_limits<uint64_t>::max());
  high.fill(0);
  low_plain = low;
  high_plain = high;
  Row special;
  for (int c = 0; c < kColumnCount; ++c) special[c] = SpecialOf(c);
  std::array<bool, kColumnCount> has_special{};
  for (size_t i = 0; i < count; ++i) {
    const Row row = ColumnsOf(open_[i], i, layout->durations_as_float);
    for (int c = 0; c < kColumnCount; ++c) {
      low[c] = std::min(low[c], row[c]);
      high[c] = std::max(high[c], row[c]);
      if (row[c] == special[c]) {
        has_special[c] = true;
      } else {
        low_plain[c] = std::min(low_plain[c], row[c]);
        high_plain[c] = std::max(high_plain[c], row[c]);
      }
    }
  }
  uint32_t row_bytes = 0;
  std::array<uint8_t, kColumnCount> widths{};  // bytes per row
  for (int c = 0; c < kColumnCount; ++c) {
    uint8_t& width = widths[c];
    if (count == 0 || low[c] == high[c]) {
      layout->base[c] = count == 0 ? 0 : low[c];
    } else {
      const int plain_bytes = BytesFor(high[c] - low[c]);
      const bool some_plain = low_plain[c] <= high_plain[c];
      const uint64_t plain_span = high_plain[c] - low_plain[c];
      // Offset 0 is the special value, so the ordinary ones need one more code.
      if (has_special[c] && some_plain && plain_span != std::numeric_limits<uint64_t>::max() &&
          BytesFor(plain_span + 1) < plain_bytes) {
        layout->zero_is_special[c] = true;
        width = static_cast<uint8_t>(BytesFor(plain_span + 1));
        layout->base[c] = low_plain[c];
      } else {
        width = static_cast<uint8_t>(plain_bytes);
        layout->base[c] = low[c];
      }
    }
    layout->position[c] = static_cast<uint8_t>(row_bytes);
    layout->mask[c] = width == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * width)) - 1;
    row_bytes += width;
  }
  layout->row_bytes = row_bytes;
  const size_t bytes = count * row_bytes + sizeof(uint64_t);
  layout->rows = std::make_unique_for_overwrite<uint8_t[]>(bytes);
  uint8_t* out = layout->rows.get();
  for (size_t i = 0; i < count; ++i) {
    const Row row = ColumnsOf(open_[i], i, layout->durations_as_float);
    for (int c = 0; c < kColumnCount; ++c) {
      uint64_t offset = row[c] - layout->base[c];
      if (layout->zero_is_special[c]) offset = row[c] == special[c] ? 0 : offset + 1;
      // Little-endian: the low `width` bytes of the offset are the field. All eight bytes are
      // stored, in column order, so each next field overwrites the excess (the last one's lands
      // in the next row or the slack): one fixed-size store instead of a variable-length copy.
      std::memcpy(out + layout->position[c], &offset, sizeof(offset));
    }
    out += row_bytes;
  }
  std::memset(layout->rows.get() + count * row_bytes, 0, sizeof(uint64_t));
  // Readers add the offset to the base directly (Value()).
  for (int c = 0; c < kColumnCount; ++c) {
    if (layout->zero_is_special[c]) layout->base[c] -= 1;
  }
  layout->size = count;
  packed_ = std::move(layout);
  Vector().swap(open_);
}

size_t EntryStore::MemoryBytes() const {
  if (packed_ != nullptr) {
    return sizeof(Layout) + packed_->size * packed_->row_bytes + sizeof(uint64_t);
  }
  return open_.capacity() * sizeof(Entry);
}

}  // namespace fr
