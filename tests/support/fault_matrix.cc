#include "tests/support/fault_matrix.h"

namespace fr::test_support {

std::string FaultCaseName(const FaultCase& fault) {
  return std::string(FaultKindName(fault.kind)) + (fault.timing ? "_timing" : "");
}

const std::vector<FaultCase>& FaultsAt8Ranks() {
  static const std::vector<FaultCase> kFaults = {
      {FaultKind::kNone, GroupKind::kData, true},
      {FaultKind::kStuckBeforeOp, GroupKind::kData, false},
      {FaultKind::kStuckBeforeOp, GroupKind::kData, true},
      {FaultKind::kCrashedRank, GroupKind::kData, true},
      {FaultKind::kOpMismatch, GroupKind::kTensor, true},
      {FaultKind::kSizeMismatch, GroupKind::kTensor, true},
      {FaultKind::kDtypeMismatch, GroupKind::kData, true},
      {FaultKind::kMissingSend, GroupKind::kPipeline, true},
      {FaultKind::kMissingRecv, GroupKind::kPipeline, false},
      {FaultKind::kGpuStall, GroupKind::kData, true},
      {FaultKind::kTransportStall, GroupKind::kData, true},
      {FaultKind::kTransportStall, GroupKind::kTensor, false},
      {FaultKind::kStraggler, GroupKind::kData, true},
  };
  return kFaults;
}

const std::vector<FaultCase>& FaultsAt512Ranks() {
  static const std::vector<FaultCase> kFaults = {
      {FaultKind::kNone, GroupKind::kData, true},
      {FaultKind::kStuckBeforeOp, GroupKind::kData, true},
      {FaultKind::kCrashedRank, GroupKind::kTensor, false},
      {FaultKind::kOpMismatch, GroupKind::kData, true},
      {FaultKind::kSizeMismatch, GroupKind::kTensor, true},
      {FaultKind::kDtypeMismatch, GroupKind::kTensor, false},
      {FaultKind::kMissingSend, GroupKind::kPipeline, false},
      {FaultKind::kMissingRecv, GroupKind::kPipeline, true},
      {FaultKind::kGpuStall, GroupKind::kData, true},
      {FaultKind::kTransportStall, GroupKind::kData, true},
      {FaultKind::kStraggler, GroupKind::kData, true},
  };
  return kFaults;
}

}  // namespace fr::test_support
