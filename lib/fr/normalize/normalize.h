// Normalization: from the decoded logical content of one dump (a Document, pickle or JSON) to the
// version-independent RankDump model.
//
//   FR_ASSIGN_OR_RETURN(Document doc, DecodePickle(bytes));
//   FR_ASSIGN_OR_RETURN(RankDump dump, NormalizeDump(doc, /*rank=*/3));
//
// Accepts every layout PyTorch has written (docs/dump-format.md): the 2023 bare
// list of entries, 1.x (seq_id, int-keyed pg_config, time_created_us), 2.0 to 2.10, and newer
// minors, whose unknown keys are counted as oddities rather than refused. JSON peculiarities
// (string pg_status values, 0 for unknown times, process_group as a list) are absorbed here.
#ifndef FR_NORMALIZE_NORMALIZE_H_
#define FR_NORMALIZE_NORMALIZE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "fr/decode/document.h"
#include "fr/model/rank_dump.h"
#include "fr/model/shared_ranks.h"

namespace fr {

// What normalizing one document may cost, in proportion to its input (Document::input()).
// Decoding is proportional to the input by construction, but a pickle value can be referenced from
// many places (a memo hit is 2 bytes), and normalizing copies what it says into each of them: one
// rank list into every group, one shape list into every entry. A few kilobytes could so demand
// gigabytes or minutes. Shared values (Document::shared: entries, shape and dtype lists, stacks;
// rank lists and strings always) are therefore read once and then found by their value id;
// beyond that, these budgets bound what a file may cost.
// Real dumps keep about as many bytes as their input (up to twice that without stacks) and read
// about one value per 3 input bytes, far below both budgets.
struct NormalizeLimits {
  // Bytes the RankDump may hold (entries, group ranks, shapes, dtypes, frames, stacks, comm
  // state): this many per input byte, and at least min_kept_bytes.
  uint64_t kept_bytes_per_input_byte = 16;
  uint64_t min_kept_bytes = uint64_t{64} << 20;
  // Values the normalizer may read, a value counted each time it is read, a string as one value per
  // 64 bytes: this many per input byte, and at least min_visits.
  uint64_t visits_per_input_byte = 16;
  uint64_t min_visits = uint64_t{64} << 20;
};

// What normalizing a document cost against its budgets, for tests and diagnostics.
struct NormalizeCost {
  uint64_t kept_bytes = 0;
  uint64_t visits = 0;
  uint64_t max_kept_bytes = 0;
  uint64_t max_visits = 0;
};

// Returns InvalidArgument when the document is not a flight-recorder dump (wrong top-level type,
// entries that are not dicts, a field of the wrong type); the message names the key path and the
// byte offset of the offending value, e.g.
//   "entries[17]['input_sizes'] (byte 5123): expected a list of shapes, got str".
// Returns ResourceExhausted past a budget of `limits`, naming where and the limit, e.g.
//   "pg_config['7']['ranks'] (byte 912): normalizing would keep more than 70000000 bytes (...)",
// and when memory runs out. `cost`, when given, receives what was spent (also on errors).
absl::StatusOr<RankDump> NormalizeDump(const Document& document, int64_t rank,
                                       const NormalizeLimits& limits = {},
                                       NormalizeCost* cost = nullptr);

// Parses a pg_config "ranks" string, "[0, 1, 2]" (PyTorch) or "[0,1,2]" (torchcomms), without any
// eval. Returns false when it is not a bracketed list of non-negative integers.
bool ParseRanksString(std::string_view text, std::vector<int64_t>* ranks);
// The same into a list the dumps read on this thread share: the last few long strings parsed are
// remembered, and the next dump that spells out the same world group (thousands of ranks, in
// every dump of a job) gets the same list without parsing it again.
bool ParseRanksStringShared(std::string_view text, SharedRanks* ranks);

}  // namespace fr

#endif  // FR_NORMALIZE_NORMALIZE_H_
