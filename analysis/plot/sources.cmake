# Plots from result CSVs, drawn by gnuplot (issue 4); the flagship study's figures (issue 17).
list(APPEND SHARDSIM_ANALYSIS_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/plot.cpp
  ${CMAKE_CURRENT_LIST_DIR}/study_figures.cpp
)
