list(APPEND SHARDSIM_MODELS_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/step.cpp
  ${CMAKE_CURRENT_LIST_DIR}/replay.cpp
  ${CMAKE_CURRENT_LIST_DIR}/strategy_graphs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/parallel_graphs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tp_overlap.cpp
  ${CMAKE_CURRENT_LIST_DIR}/parallel_step.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rank_program.cpp
  ${CMAKE_CURRENT_LIST_DIR}/task_graph.cpp
  ${CMAKE_CURRENT_LIST_DIR}/executor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/variation.cpp
  ${CMAKE_CURRENT_LIST_DIR}/timed_faults.cpp
  ${CMAKE_CURRENT_LIST_DIR}/topology_comm.cpp)
