#include "fr/verdict/failure_class.h"

#include <array>
#include <utility>

namespace fr {
namespace {

constexpr std::array<std::pair<FailureClass, std::string_view>, 9> kNames = {{
    {FailureClass::kNone, "none"},
    {FailureClass::kMissingParticipant, "missing_participant"},
    {FailureClass::kGpuStall, "gpu_stall"},
    {FailureClass::kOpMismatch, "op_mismatch"},
    {FailureClass::kSizeMismatch, "size_mismatch"},
    {FailureClass::kDtypeMismatch, "dtype_mismatch"},
    {FailureClass::kP2pUnmatched, "p2p_unmatched"},
    {FailureClass::kStuckCollective, "stuck_collective"},
    {FailureClass::kInsufficientEvidence, "insufficient_evidence"},
}};

}  // namespace

std::string_view FailureClassName(FailureClass c) {
  for (const auto& [value, name] : kNames) {
    if (value == c) return name;
  }
  return "none";
}

std::optional<FailureClass> ParseFailureClass(std::string_view name) {
  for (const auto& [value, text] : kNames) {
    if (text == name) return value;
  }
  return std::nullopt;
}

FailureClass ClassOfReason(BlockReason reason) {
  switch (reason) {
    case BlockReason::kOpMismatch:
      return FailureClass::kOpMismatch;
    case BlockReason::kSizeMismatch:
      return FailureClass::kSizeMismatch;
    case BlockReason::kDtypeMismatch:
      return FailureClass::kDtypeMismatch;
    case BlockReason::kNotStarted:
      return FailureClass::kGpuStall;
    case BlockReason::kNoMatchingRecv:
    case BlockReason::kNoMatchingSend:
    case BlockReason::kRecvHeldByBatch:
    case BlockReason::kSendHeldByBatch:
      return FailureClass::kP2pUnmatched;
    case BlockReason::kNeverIssued:
    case BlockReason::kDumpMissing:
    case BlockReason::kDumpUnreadable:
    case BlockReason::kBehindEarlierOp:
    case BlockReason::kUnrecordedP2p:
      return FailureClass::kMissingParticipant;
  }
  return FailureClass::kMissingParticipant;
}

}  // namespace fr
