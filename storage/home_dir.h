// The user's home directory, under which meshtune keeps its profiles and database.
#ifndef MESHTUNE_STORAGE_HOME_DIR_H_
#define MESHTUNE_STORAGE_HOME_DIR_H_

#include <string>

namespace meshtune::storage {

// $HOME when set and not empty, else the password database's entry for this user, else ".".
std::string HomeDir();

}  // namespace meshtune::storage

#endif  // MESHTUNE_STORAGE_HOME_DIR_H_
