// The simulator's faults as the verdict and summary tests run them: one list for an 8-rank job
// (2 x 2 x 2) and one for a 512-rank job with wrapped ring buffers, each fault on the kind of
// group where it shows (a desync in TP or DP, a skipped send in PP), with and without timing.
#ifndef FR_TESTS_SUPPORT_FAULT_MATRIX_H_
#define FR_TESTS_SUPPORT_FAULT_MATRIX_H_

#include <string>
#include <vector>

#include "fr/simulate/job_simulator.h"

namespace fr::test_support {

struct FaultCase {
  FaultKind kind;
  GroupKind group;
  bool timing;
};

// "missing_send_timing": a name for a parameterized test.
std::string FaultCaseName(const FaultCase& fault);

const std::vector<FaultCase>& FaultsAt8Ranks();
const std::vector<FaultCase>& FaultsAt512Ranks();

}  // namespace fr::test_support

#endif  // FR_TESTS_SUPPORT_FAULT_MATRIX_H_
