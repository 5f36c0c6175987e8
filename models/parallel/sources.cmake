list(APPEND SHARDSIM_MODELS_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/mesh.cpp
  ${CMAKE_CURRENT_LIST_DIR}/placement.cpp
  ${CMAKE_CURRENT_LIST_DIR}/model_spec.cpp
  ${CMAKE_CURRENT_LIST_DIR}/memory_activations.cpp
  ${CMAKE_CURRENT_LIST_DIR}/memory_stage.cpp
  ${CMAKE_CURRENT_LIST_DIR}/layer_compute.cpp)
