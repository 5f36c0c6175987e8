# Trace importers: Chakra ET (protobuf) and JSON, Kineto Chrome traces, ASTRA-sim 1.0 text.
# The Chakra schema (chakra_et.proto, written from the documented field numbers) is compiled
# with Debian's protoc into its own static library: generated code is not held to our warning
# set, and its headers are included as SYSTEM so they do not warn in our files either.
find_package(Protobuf REQUIRED)
find_package(ZLIB REQUIRED)
if(NOT TARGET shardsim_chakra_proto)
  protobuf_generate_cpp(_chakra_pb_srcs _chakra_pb_hdrs ${CMAKE_CURRENT_LIST_DIR}/chakra_et.proto)
  add_library(shardsim_chakra_proto STATIC ${_chakra_pb_srcs} ${_chakra_pb_hdrs})
  target_include_directories(shardsim_chakra_proto SYSTEM PUBLIC ${CMAKE_CURRENT_BINARY_DIR})
  target_link_libraries(shardsim_chakra_proto PUBLIC protobuf::libprotobuf-lite)
  set_target_properties(shardsim_chakra_proto PROPERTIES POSITION_INDEPENDENT_CODE ON)
endif()

list(APPEND SHARDSIM_TRACES_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/input.cpp
  ${CMAKE_CURRENT_LIST_DIR}/json_util.cpp
  ${CMAKE_CURRENT_LIST_DIR}/comm_kind.cpp
  ${CMAKE_CURRENT_LIST_DIR}/chakra_et.cpp
  ${CMAKE_CURRENT_LIST_DIR}/chakra_json.cpp
  ${CMAKE_CURRENT_LIST_DIR}/chakra_validate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kineto.cpp
  ${CMAKE_CURRENT_LIST_DIR}/astra_v1.cpp
  ${CMAKE_CURRENT_LIST_DIR}/native.cpp
  ${CMAKE_CURRENT_LIST_DIR}/info.cpp
)
list(APPEND SHARDSIM_TRACES_DEPS shardsim_chakra_proto ZLIB::ZLIB)
