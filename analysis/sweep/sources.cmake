# Sweeps (issue 4): sweep files, thread pool, ordered resumable output, MPI distribution.
list(APPEND SHARDSIM_ANALYSIS_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/sweep_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/csv_read.cpp
  ${CMAKE_CURRENT_LIST_DIR}/output.cpp
  ${CMAKE_CURRENT_LIST_DIR}/engine.cpp
  ${CMAKE_CURRENT_LIST_DIR}/progress.cpp
  ${CMAKE_CURRENT_LIST_DIR}/distribute.cpp
)

# MPI distribution of sweeps (analysis/sweep/distribute.hpp): built in when MPI is found
# (SHARDSIM_WITH_MPI = AUTO) or required (ON); the same binary runs without mpirun.
if(NOT SHARDSIM_WITH_MPI STREQUAL "OFF")
  if(SHARDSIM_WITH_MPI STREQUAL "ON")
    find_package(MPI REQUIRED COMPONENTS CXX)
  else()
    find_package(MPI QUIET COMPONENTS CXX)
  endif()
  if(MPI_CXX_FOUND)
    list(APPEND SHARDSIM_ANALYSIS_DEPS MPI::MPI_CXX)
    set_property(SOURCE ${CMAKE_CURRENT_LIST_DIR}/distribute.cpp APPEND PROPERTY COMPILE_DEFINITIONS SHARDSIM_SWEEP_MPI)
    set(SHARDSIM_SWEEP_MPI ON CACHE INTERNAL "shardsim sweep is built with MPI distribution")
  else()
    set(SHARDSIM_SWEEP_MPI OFF CACHE INTERNAL "shardsim sweep is built with MPI distribution")
  endif()
else()
  set(SHARDSIM_SWEEP_MPI OFF CACHE INTERNAL "shardsim sweep is built with MPI distribution")
endif()
