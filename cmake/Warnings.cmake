# shardsim_warnings(target): the warning set every shardsim target builds with.
function(shardsim_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
    -Wno-sign-conversion -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual)
  if(SHARDSIM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# shardsim_layer(name SOURCES...): one library target per layer, aliased shardsim::name.
function(shardsim_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;DEPS" ${ARGN})
  add_library(shardsim_${name} STATIC ${L_SOURCES})
  add_library(shardsim::${name} ALIAS shardsim_${name})
  target_include_directories(shardsim_${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_compile_features(shardsim_${name} PUBLIC cxx_std_20)
  target_link_libraries(shardsim_${name} PUBLIC ${L_DEPS})
  shardsim_warnings(shardsim_${name})
endfunction()

# shardsim_test(name SOURCES... DEPS... [LABELS ...] [ARGS ...]): a doctest executable registered with
# CTest. Label "unit" (the default) runs in the sanitizer configuration too; give slow suites
# (golden CLI runs, validation against emulated clusters) their own label.
function(shardsim_test name)
  cmake_parse_arguments(T "" "" "SOURCES;DEPS;LABELS;ARGS" ${ARGN})
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  add_executable(${name} ${PROJECT_SOURCE_DIR}/tests/doctest_main.cpp ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_DEPS} doctest::doctest)
  target_compile_definitions(${name} PRIVATE
    SHARDSIM_FIXTURES_DIR="${SHARDSIM_FIXTURES_DIR}"
    SHARDSIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    SHARDSIM_BINARY_DIR="${PROJECT_BINARY_DIR}")
  shardsim_warnings(${name})
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
endfunction()
