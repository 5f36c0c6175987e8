list(APPEND SHARDSIM_MODELS_SOURCES ${CMAKE_CURRENT_LIST_DIR}/device.cpp ${CMAKE_CURRENT_LIST_DIR}/device_json.cpp ${CMAKE_CURRENT_LIST_DIR}/gemm.cpp
     ${CMAKE_CURRENT_LIST_DIR}/attention.cpp ${CMAKE_CURRENT_LIST_DIR}/op_cost.cpp
     ${CMAKE_CURRENT_LIST_DIR}/transformer_cost.cpp)
