// The translation unit that builds the test files' precompiled header (tests/CMakeLists.txt).
