# Registers a GoogleTest program's tests with CTest one suite at a time: `cmake -D PROGRAM=...
# -D OUTPUT=... -D WORKING_DIRECTORY=... -D PROPERTIES="TIMEOUT 600" -P gtest_suites.cmake` lists
# the program's tests and writes OUTPUT, a CTest script with one test per suite, `Suite.*`, run as
# `PROGRAM --gtest_filter=Suite.*` with PROPERTIES and a COST of its number of cases (ctest starts
# the costliest first). tests/CMakeLists.txt runs it after each link of a layer's program. A
# process per suite rather than per case: a test program under AddressSanitizer takes 0.23 s to
# start and end (0.08 s in the release build), and the layers' programs hold about 960 cases in
# 200 suites.
execute_process(COMMAND "${PROGRAM}" --gtest_list_tests
                WORKING_DIRECTORY "${WORKING_DIRECTORY}"
                RESULT_VARIABLE status OUTPUT_VARIABLE listing ERROR_VARIABLE errors
                TIMEOUT 60)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} --gtest_list_tests failed (${status}):\n${listing}${errors}")
endif()
# (Brackets would keep CMake's list from splitting there: the comments of parametrized cases.)
string(REGEX REPLACE "[][;]" "_" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
set(suite "")
set(cases 0)
macro(add_suite)
  if(NOT suite STREQUAL "" AND NOT suite MATCHES "^DISABLED_")
    string(APPEND script
      "if(DEFINED weft_suite_${suite})\n"
      "  message(FATAL_ERROR [==[${suite}: a suite of ${PROGRAM} and of ]==] "
      "\"\${weft_suite_${suite}}: rename one, since CTest names a test by its suite\")\n"
      "endif()\n"
      "set(weft_suite_${suite} [==[${PROGRAM}]==])\n"
      "add_test([==[${suite}.*]==] [==[${PROGRAM}]==] [==[--gtest_filter=${suite}.*]==])\n"
      "set_tests_properties([==[${suite}.*]==] PROPERTIES WORKING_DIRECTORY "
      "[==[${WORKING_DIRECTORY}]==] COST ${cases} ${PROPERTIES})\n")
  endif()
endmacro()
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #][^ ]*)\\.( *#.*)?$")  # a suite: `Suite.` or `Prefix/Suite/0.  # ...`
    set(next "${CMAKE_MATCH_1}")  # (add_suite's own match would overwrite CMAKE_MATCH_1)
    add_suite()
    set(suite "${next}")
    set(cases 0)
  elseif(line MATCHES "^  [^ ]")  # one of its cases
    math(EXPR cases "${cases} + 1")
  endif()
endforeach()
add_suite()
file(WRITE "${OUTPUT}" "${script}")
