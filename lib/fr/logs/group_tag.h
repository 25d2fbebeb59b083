// ProcessGroupNCCL's tag before its messages, in every form torch has written:
//
//   [Rank 3] Watchdog caught collective operation timeout ...          (before 2.2)
//   [PG 1 Rank 0] ...  [PG 0 (default_pg) Rank 12] ...                  (2.2 - 2.3)
//   [PG ID 2 PG GUID 9 Rank 4] ...  [PG ID 0 PG GUID 0(default_pg) Rank 12] ...  (2.4+)
//
// The rank is the rank within the tagged group; only the default group's is the global rank.
#ifndef FR_LOGS_GROUP_TAG_H_
#define FR_LOGS_GROUP_TAG_H_

#include <cstdint>
#include <string_view>

namespace fr::logs_internal {

struct GroupTag {
  // The group's GUID (its id in the 2.2 form); empty for the pre-2.2 form, which names none.
  std::string_view name;
  bool is_default = false;
  int64_t rank = -1;
};

// The first tag in `text`; false when there is none. "[Rank 2 Error Snippet]" (Ray) and
// "[rank2]:" (torchrun's prefix) are not tags.
bool ParseGroupTag(std::string_view text, GroupTag* tag);

}  // namespace fr::logs_internal

#endif  // FR_LOGS_GROUP_TAG_H_
