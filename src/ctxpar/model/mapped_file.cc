#include "ctxpar/model/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ctxpar/core/error.h"

namespace ctxpar::model {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  CTXPAR_CHECK_INPUT(fd >= 0, "cannot open '{}': {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    CTXPAR_INPUT_FAIL("cannot stat '{}': {}", path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    CTXPAR_INPUT_FAIL("'{}' is not a regular file", path);
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      CTXPAR_INPUT_FAIL("cannot map '{}' ({} bytes): {}", path, size_, std::strerror(err));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping stays valid without the descriptor
}

void MappedFile::release_pages() const {
  // A read-only private mapping has no dirty pages: MADV_DONTNEED only drops them from the
  // page tables. Advisory, so a refusal leaves the pages mapped and is not an error.
  if (data_) ::madvise(const_cast<uint8_t*>(data_), size_, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace ctxpar::model
