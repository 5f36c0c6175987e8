# Capacity planner (issue 4).
list(APPEND SHARDSIM_ANALYSIS_SOURCES ${CMAKE_CURRENT_LIST_DIR}/plan.cpp)
# The "does not fit" line of step, compare and plan.
list(APPEND SHARDSIM_ANALYSIS_SOURCES ${CMAKE_CURRENT_LIST_DIR}/fit.cpp)
# Goodput under failures (issue 16).
list(APPEND SHARDSIM_ANALYSIS_SOURCES ${CMAKE_CURRENT_LIST_DIR}/reliability.cpp)
# The mesh search of the planner (issue 13).
list(APPEND SHARDSIM_ANALYSIS_SOURCES ${CMAKE_CURRENT_LIST_DIR}/mesh_plan.cpp)
