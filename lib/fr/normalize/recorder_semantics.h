// What PyTorch's flight recorder means beyond what it writes: fixes applied to a normalized dump
// so that later stages read every backend and version alike. Each rule below was observed in
// dumps written by real PyTorch (tests/torch/capture.py; see docs/dump-format.md) or is stated
// by PyTorch's sources, and each application is counted as an oddity of the dump.
//
//   FR_ASSIGN_OR_RETURN(RankDump dump, NormalizeDump(doc, rank));  // calls this already
//
// - Members of a slow-path coalesced collective and of a batch_isend_irecv are recorded without
//   events: they stay "scheduled", not retired, forever. Only the entry that closes the group
//   ("nccl:coalesced", "nccl:<op>_coalesced") gets events and retirement. Members take the
//   closing entry's state (Entry::state_from_batch says so), and a closing entry of a p2p batch
//   is marked is_p2p (PyTorch writes false there, pytorch/pytorch#139280).
// - Gloo's pg_status counts op ids, not collective seq ids (2.13 and 2.14: last_enqueued equals
//   the group's last op_id). Such statuses are translated to collective seq ids through the
//   dump's own entries.
#ifndef FR_NORMALIZE_RECORDER_SEMANTICS_H_
#define FR_NORMALIZE_RECORDER_SEMANTICS_H_

#include "fr/model/rank_dump.h"

namespace fr {

// Applies the rules above in place. Never fails: a dump that does not fit a rule is left as is.
void ApplyRecorderSemantics(RankDump* dump);

}  // namespace fr

#endif  // FR_NORMALIZE_RECORDER_SEMANTICS_H_
