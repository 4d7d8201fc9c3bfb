#include "storage/home_dir.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

namespace meshtune::storage {

std::string HomeDir() {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') return home;
  const passwd* pw = getpwuid(getuid());
  return pw != nullptr && pw->pw_dir != nullptr ? pw->pw_dir : ".";
}

}  // namespace meshtune::storage
