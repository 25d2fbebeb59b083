// What an NVIDIA Xid code means for a training job: a table kept as data, one row per code the
// driver documents (NVIDIA's "Xid Errors" catalog), so that the root-cause stage can tell a
// notice from a fault.
//
//   XidInfo info = LookUpXid(79);   // {kHardware, "GPU has fallen off the bus"}
//   if (info.severity == XidSeverity::kInformational) ...  // evidence, never a cause by itself
#ifndef FR_LOGS_XID_CATALOG_H_
#define FR_LOGS_XID_CATALOG_H_

#include <cstdint>
#include <string_view>

namespace fr {

enum class XidSeverity : uint8_t {
  // A notice the GPU recovered from, or a consequence of an earlier error (row remapping
  // recorded, a high single-bit ECC rate, preemptive cleanup after another Xid): evidence only.
  kInformational,
  // Raised by what the program did on the GPU (a memory page fault, an engine exception, a
  // channel reset after a bad kernel): a CUDA error of the job, not broken hardware.
  kApplication,
  // The GPU, its memory, its links or its firmware failed: drain the node.
  kHardware,
  // A code the table does not know: treated as a fault of the GPU, as before the table existed.
  kUnknown,
};

struct XidInfo {
  XidSeverity severity = XidSeverity::kUnknown;
  std::string_view meaning;  // empty for an unknown code
};

XidInfo LookUpXid(int32_t xid);

}  // namespace fr

#endif  // FR_LOGS_XID_CATALOG_H_
