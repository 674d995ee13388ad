// A read-only memory map of a whole file. Pages are read from disk (or the page cache) on
// first touch, so a rank that copies out only its slice of a tensor reads only those pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ctxpar::model {

class MappedFile {
 public:
  // Maps `path` read-only. Throws Error naming the path and the OS error if it cannot be
  // opened or mapped. An empty file maps to size() == 0 and data() == nullptr.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // Drops the pages this process has touched from its page tables (they leave its RSS); the
  // mapping stays valid and a later read faults them in again from the page cache or disk.
  void release_pages() const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ctxpar::model
