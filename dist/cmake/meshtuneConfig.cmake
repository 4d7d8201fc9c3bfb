# meshtune's CMake package (installed as PREFIX/lib/cmake/meshtune/meshtuneConfig.cmake by
# meshtune's dist/install.sh). find_package(meshtune) defines:
#   meshtune::runtime   imported library: libmeshtune_runtime.so, its headers and MPI
#                       (MPI::MPI_CXX); what a generated kernel links
#   meshtune::plan      imported library: libmeshtune.so, the plan API for MPI
#                       applications (meshtune/plan.h in C++, meshtune/meshtune.h in C)
#                       over meshtune::runtime, with Abseil's status (find_package(absl))
#   meshtune::meshtune  imported executable: the meshtune program
#   meshtune_kernel(NAME EXPR <expr> EXTENTS <m=64,...> (MESH <x=2,y=2> | RANKS <n>)
#                   [WISDOM <file>] [ESTIMATE] [PROFILE <name>] [DTYPE f32|f64])
#       a static library NAME with the kernel `meshtune codegen` generates at build time
#       for the workload: its best record in the wisdom file (a file of `meshtune records
#       export`; no database or home directory is read). A workload missing from the file
#       fails the build with the exact `meshtune tune ...` commands to run, unless ESTIMATE:
#       then (and without WISDOM) the cost model's best with built-in machine numbers, a
#       deterministic model-only search. Include "NAME.h"; link NAME (which links
#       ScaLAPACK: a record whose answer is the library calls PSGEMM).
cmake_minimum_required(VERSION 3.13)

get_filename_component(_meshtune_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

include(CMakeFindDependencyMacro)
find_dependency(MPI COMPONENTS CXX)

if(NOT TARGET meshtune::runtime)
  add_library(meshtune::runtime SHARED IMPORTED)
  set_target_properties(meshtune::runtime PROPERTIES
    IMPORTED_LOCATION "${_meshtune_prefix}/lib/libmeshtune_runtime.so"
    IMPORTED_SONAME "libmeshtune_runtime.so"
    INTERFACE_INCLUDE_DIRECTORIES "${_meshtune_prefix}/include"
    INTERFACE_COMPILE_DEFINITIONS "OMPI_SKIP_MPICXX=1"
    INTERFACE_LINK_LIBRARIES "MPI::MPI_CXX")
endif()
if(NOT TARGET meshtune::plan)
  find_dependency(absl CONFIG)
  add_library(meshtune::plan SHARED IMPORTED)
  set_target_properties(meshtune::plan PROPERTIES
    IMPORTED_LOCATION "${_meshtune_prefix}/lib/libmeshtune.so"
    IMPORTED_SONAME "libmeshtune.so"
    INTERFACE_COMPILE_FEATURES cxx_std_17
    INTERFACE_LINK_LIBRARIES "meshtune::runtime;absl::status;absl::statusor;absl::strings")
endif()
if(NOT TARGET meshtune::meshtune)
  add_executable(meshtune::meshtune IMPORTED)
  set_target_properties(meshtune::meshtune PROPERTIES
    IMPORTED_LOCATION "${_meshtune_prefix}/bin/meshtune")
endif()

function(meshtune_kernel NAME)
  cmake_parse_arguments(PARSE_ARGV 1 MT "ESTIMATE" "EXPR;EXTENTS;MESH;RANKS;WISDOM;PROFILE;DTYPE" "")
  if(MT_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "meshtune_kernel(${NAME}): unknown arguments: ${MT_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "meshtune_kernel(${NAME}): the name must be a C identifier")
  endif()
  if(NOT MT_EXPR OR NOT MT_EXTENTS)
    message(FATAL_ERROR "meshtune_kernel(${NAME}): give EXPR (e.g. \"C[m,n] += A[m,k] * B[k,n]\") and EXTENTS (e.g. m=64,n=48,k=32)")
  endif()
  if((MT_MESH AND MT_RANKS) OR (NOT MT_MESH AND NOT MT_RANKS))
    message(FATAL_ERROR "meshtune_kernel(${NAME}): give exactly one of MESH (e.g. x=2,y=2) and RANKS (e.g. 4)")
  endif()
  if(NOT MT_WISDOM AND NOT MT_ESTIMATE)
    message(FATAL_ERROR "meshtune_kernel(${NAME}): give WISDOM <file> (of meshtune records export) or ESTIMATE")
  endif()
  if(NOT MT_DTYPE)
    set(MT_DTYPE f32)
  endif()
  set(args codegen --expr "${MT_EXPR}" --extents "${MT_EXTENTS}" --dtype "${MT_DTYPE}" --name "${NAME}")
  if(MT_MESH)
    list(APPEND args --mesh "${MT_MESH}")
  else()
    list(APPEND args --ranks "${MT_RANKS}")
  endif()
  if(MT_PROFILE)
    list(APPEND args --profile "${MT_PROFILE}")
  endif()
  set(depends meshtune::meshtune)
  if(MT_WISDOM)
    get_filename_component(wisdom "${MT_WISDOM}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND args --lookup --wisdom "${wisdom}")
    list(APPEND depends "${wisdom}")
  endif()
  if(MT_ESTIMATE)
    list(APPEND args --estimate)
  endif()
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/meshtune_kernels/${NAME}")
  # Hermetic: meshtune gets no home directory, profile folder or cache to read.
  add_custom_command(
    OUTPUT "${dir}/${NAME}.cc" "${dir}/${NAME}.h"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${dir}"
    COMMAND "${CMAKE_COMMAND}" -E env HOME=/nonexistent MESHTUNE_HOME=/nonexistent
            XDG_CACHE_HOME=/nonexistent "$<TARGET_FILE:meshtune::meshtune>" ${args}
            -o "${dir}/${NAME}.cc"
    DEPENDS ${depends}
    COMMENT "meshtune: generating kernel ${NAME}"
    VERBATIM)
  add_library(${NAME} STATIC "${dir}/${NAME}.cc" "${dir}/${NAME}.h")
  target_include_directories(${NAME} PUBLIC "${dir}")
  # A record whose answer is the library gives a kernel calling ScaLAPACK's GEMM; which one
  # the wisdom file holds is known only at build time, so every kernel links it (Debian's
  # libscalapack-openmpi-dev).
  target_link_libraries(${NAME} PUBLIC meshtune::runtime scalapack-openmpi)
  target_compile_features(${NAME} PUBLIC cxx_std_17)
endfunction()
