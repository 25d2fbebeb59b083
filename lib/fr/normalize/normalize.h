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

namespace fr {

// Returns InvalidArgument when the document is not a flight-recorder dump (wrong top-level type,
// entries that are not dicts, a field of the wrong type); the message names the key path and the
// byte offset of the offending value, e.g.
//   "entries[17]['input_sizes'] (byte 5123): expected a list of shapes, got str".
absl::StatusOr<RankDump> NormalizeDump(const Document& document, int64_t rank);

// Parses a pg_config "ranks" string, "[0, 1, 2]" (PyTorch) or "[0,1,2]" (torchcomms), without any
// eval. Returns false when it is not a bracketed list of non-negative integers.
bool ParseRanksString(std::string_view text, std::vector<int64_t>* ranks);

}  // namespace fr

#endif  // FR_NORMALIZE_NORMALIZE_H_
