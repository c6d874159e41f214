#include "storage/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "storage/crash_point.hpp"

namespace claimsched::storage {

namespace {

core::Error io(const std::string& what) {
  return core::make_error(core::Errc::io_error, what + ": " + std::strerror(errno));
}

std::string parent_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

core::Status sync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io("cannot open directory " + dir + " to sync it");
  int rc = ::fsync(fd);
  int saved = errno;
  ::close(fd);
  errno = saved;
  if (rc != 0) return io("cannot sync directory " + dir);
  return core::Status::ok();
}

core::Status write_file_atomically(const std::string& path, std::string_view contents) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io("cannot create " + tmp);
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int saved = errno;
      ::close(fd);
      errno = saved;
      return io("cannot write " + tmp);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    int saved = errno;
    ::close(fd);
    errno = saved;
    return io("cannot sync " + tmp);
  }
  if (::close(fd) != 0) return io("cannot close " + tmp);
  crash::point(crash::kFileWritten);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return io("cannot rename " + tmp + " to " + path);
  crash::point(crash::kFileRenamed);
  return sync_directory(parent_of(path));
}

}  // namespace claimsched::storage
