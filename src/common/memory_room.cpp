#include "common/memory_room.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/error.h"

namespace parley {
namespace {

namespace fs = std::filesystem;

// A limit at or past this is "no limit" (cgroup v1 writes 2^63 less a page).
constexpr uint64_t kNoLimit = uint64_t(1) << 62;

std::optional<uint64_t> read_number(const fs::path& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  try {
    size_t used = 0;
    const uint64_t value = std::stoull(word, &used);
    if (used != word.size()) return std::nullopt;
    return value;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// "key value" lines (/proc/meminfo, memory.stat): the value of `key`, nullopt without one.
std::optional<uint64_t> keyed_value(const fs::path& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name;
    uint64_t value = 0;
    if (!(fields >> name >> value)) continue;
    if (!name.empty() && name.back() == ':') name.pop_back();
    if (name == key) return value;
  }
  return std::nullopt;
}

struct Group {
  fs::path dir;        // the group's folder in the mounted hierarchy
  std::string name;    // as /proc/self/cgroup names it
  bool v2 = false;
};

// A group's folder and its ancestors' up to the hierarchy's root (whose limit, if any, is the
// machine's). A path that the mount does not show (a container sees its own group as the
// root) is the mount's root.
std::vector<Group> group_and_ancestors(const fs::path& mount, const std::string& path, bool v2) {
  std::vector<Group> groups;
  fs::path relative = fs::path(path).relative_path();
  std::error_code ec;
  if (!fs::is_directory(mount / relative, ec)) relative.clear();
  while (true) {
    groups.push_back({mount / relative, "/" + relative.generic_string(), v2});
    if (relative.empty()) break;
    relative = relative.parent_path();
  }
  return groups;
}

// The memory cgroups the process is in, v1 ("N:...memory...:/path") and v2 ("0::/path").
std::vector<Group> memory_groups(const fs::path& root) {
  std::vector<Group> groups;
  std::ifstream in(root / "proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    std::vector<Group> found;
    if (controllers.empty()) {
      // v2: mounted at /sys/fs/cgroup, or at /sys/fs/cgroup/unified beside v1's.
      for (const char* mount : {"sys/fs/cgroup", "sys/fs/cgroup/unified"}) {
        std::error_code ec;
        if (fs::exists(root / mount / "cgroup.controllers", ec)) {
          found = group_and_ancestors(root / mount, path, true);
          break;
        }
      }
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      found = group_and_ancestors(root / "sys/fs/cgroup/memory", path, false);
    }
    groups.insert(groups.end(), found.begin(), found.end());
  }
  return groups;
}

std::optional<uint64_t> group_limit(const Group& g) {
  const auto limit = read_number(g.dir / (g.v2 ? "memory.max" : "memory.limit_in_bytes"));
  if (!limit || *limit >= kNoLimit) return std::nullopt;
  return limit;
}

// What a limited group can still take: its limit less its usage, its file pages (the page
// cache, which the kernel reclaims before it kills) counted as free.
std::optional<uint64_t> group_room(const Group& g) {
  const auto limit = group_limit(g);
  if (!limit) return std::nullopt;
  const auto usage = read_number(g.dir / (g.v2 ? "memory.current" : "memory.usage_in_bytes"));
  if (!usage) return std::nullopt;
  const fs::path stat = g.dir / "memory.stat";
  uint64_t file = 0;
  for (const char* key : {"active_file", "inactive_file"}) {
    const auto hierarchical = g.v2 ? std::nullopt : keyed_value(stat, std::string("total_") + key);
    file += hierarchical.value_or(keyed_value(stat, key).value_or(0));
  }
  const uint64_t held = *usage > file ? *usage - file : 0;
  return *limit > held ? *limit - held : 0;
}

// Whole megabytes below 10 GB, so that two sizes near each other still read apart.
std::string shown_size(uint64_t bytes) {
  char text[32];
  if (bytes < uint64_t(10) * 1000 * 1000 * 1000) {
    std::snprintf(text, sizeof text, "%.0f MB", double(bytes) / 1e6);
  } else {
    std::snprintf(text, sizeof text, "%.1f GB", double(bytes) / 1e9);
  }
  return text;
}

}  // namespace

// The kernel writes "kB" and means KiB.
std::optional<uint64_t> mem_available_bytes(const fs::path& root) {
  const auto kib = keyed_value(root / "proc/meminfo", "MemAvailable");
  if (!kib) return std::nullopt;
  return *kib * 1024;
}

std::optional<MemoryRoom> memory_room(const fs::path& root) {
  std::optional<MemoryRoom> room;
  if (const auto available = mem_available_bytes(root)) {
    const uint64_t swap_free = keyed_value(root / "proc/meminfo", "SwapFree").value_or(0) * 1024;
    room = MemoryRoom{*available + swap_free, "the system's available memory and swap"};
  }
  for (const Group& g : memory_groups(root)) {
    const auto group = group_room(g);
    if (group && (!room || *group < room->bytes)) {
      room = MemoryRoom{*group, "the limit of the memory cgroup " + g.name};
    }
  }
  return room;
}

uint64_t memory_limit(const fs::path& root) {
  uint64_t limit = keyed_value(root / "proc/meminfo", "MemTotal").value_or(0) * 1024;
  if (limit == 0) {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
    limit = pages > 0 && page_size > 0 ? uint64_t(pages) * uint64_t(page_size) : 0;
  }
  for (const Group& g : memory_groups(root)) {
    const auto group = group_limit(g);
    if (group && (limit == 0 || *group < limit)) limit = *group;
  }
  return limit;
}

void require_memory_room(uint64_t bytes, const std::string& what) {
  const char* check = std::getenv("PARLEY_MEMORY_CHECK");
  if (check && std::string(check) == "0") return;
  const auto room = memory_room();
  // Headroom for what the work takes besides (threads, the allocator's own, page tables): a
  // load that fits only without it is ended by the kernel part way (measured under cgroup
  // limits), and would leave no room for a conversation's KV anyway.
  const uint64_t headroom = bytes / 16 + (uint64_t(16) << 20);
  if (!room || bytes + headroom <= room->bytes) return;
  fail(Status::out_of_memory,
       what + " needs " + shown_size(bytes) + " more memory, but this process can take about " +
           shown_size(room->bytes) + " more (" + room->limited_by +
           "): free memory, or load a smaller or more quantized model (PARLEY_MEMORY_CHECK=0 "
           "skips this check)");
}

}  // namespace parley
