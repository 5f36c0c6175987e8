# Capacity planner (issue 4).
list(APPEND SHARDSIM_ANALYSIS_SOURCES ${CMAKE_CURRENT_LIST_DIR}/plan.cpp)
