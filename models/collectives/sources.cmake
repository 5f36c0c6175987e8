list(APPEND SHARDSIM_MODELS_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/collective.cpp
  ${CMAKE_CURRENT_LIST_DIR}/flow_eval.cpp
  ${CMAKE_CURRENT_LIST_DIR}/collective_run.cpp
  ${CMAKE_CURRENT_LIST_DIR}/algorithm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ring.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ring_channels.cpp
  ${CMAKE_CURRENT_LIST_DIR}/torus.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hierarchical.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tree.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tree_channels.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvls_tree.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rabenseifner.cpp
  ${CMAKE_CURRENT_LIST_DIR}/direct.cpp
  ${CMAKE_CURRENT_LIST_DIR}/in_network.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nccl_tuning.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nccl_model.cpp
)
