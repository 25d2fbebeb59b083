// The failure classes of the report contract (Verdict.failure_class, Finding.kind) as values:
// verdict logic compares these, and the strings of the contract appear only when a report is
// written.
//
//   FailureClass c = ClassOfReason(BlockReason::kNotStarted);   // kGpuStall
//   finding->set_kind(std::string(FailureClassName(c)));         // "gpu_stall"
#ifndef FR_VERDICT_FAILURE_CLASS_H_
#define FR_VERDICT_FAILURE_CLASS_H_

#include <optional>
#include <string_view>

#include "fr/match/matcher.h"

namespace fr {

enum class FailureClass : uint8_t {
  kNone,
  kMissingParticipant,
  kGpuStall,
  kOpMismatch,
  kSizeMismatch,
  kDtypeMismatch,
  kP2pUnmatched,
  kStuckCollective,
  kInsufficientEvidence,
};

// "none", "missing_participant", ... exactly as in the report contract.
std::string_view FailureClassName(FailureClass c);
// The inverse; nullopt for finding kinds that are no failure class ("straggler", "data_loss").
std::optional<FailureClass> ParseFailureClass(std::string_view name);

// The class a block of this reason puts its blockers in.
FailureClass ClassOfReason(BlockReason reason);

// Classes that name culprit ranks.
inline bool NamesCulprits(FailureClass c) {
  return c == FailureClass::kMissingParticipant || c == FailureClass::kGpuStall ||
         c == FailureClass::kOpMismatch || c == FailureClass::kSizeMismatch ||
         c == FailureClass::kDtypeMismatch || c == FailureClass::kP2pUnmatched;
}

// A failure verdict (exit status 1): everything but none and insufficient_evidence.
inline bool IsFailureClass(FailureClass c) {
  return c != FailureClass::kNone && c != FailureClass::kInsufficientEvidence;
}

}  // namespace fr

#endif  // FR_VERDICT_FAILURE_CLASS_H_
