# Weight-update strategies: below models/memory and models/step, which both use them.
list(APPEND SHARDSIM_MODELS_SOURCES ${CMAKE_CURRENT_LIST_DIR}/strategy.cpp)
