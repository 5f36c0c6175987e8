# Plots from result CSVs, drawn by gnuplot (issue 4).
list(APPEND SHARDSIM_ANALYSIS_SOURCES ${CMAKE_CURRENT_LIST_DIR}/plot.cpp)
