// Resident memory of this process, from /proc/self/status (Linux).
#pragma once

#include <cstdint>

namespace parley::test {

uint64_t resident_bytes();       // VmRSS now
uint64_t resident_file_bytes();  // RssFile now: file pages mapped into this process
uint64_t peak_resident_bytes();  // VmHWM: the peak since start or since reset_peak_resident()
// Starts a new peak measurement (writes 5 to /proc/self/clear_refs); false when the kernel
// does not allow it.
bool reset_peak_resident();
// Hands free heap pages back to the kernel, so that RSS measures what is in use.
void release_free_heap();

}  // namespace parley::test
