//===- TargetCpu.h - does this CPU run what this test program was built for?
//
// The kernel-template tests are built once per -march (plain x86-64, AVX2,
// AVX-512, AVX-512 VNNI); a program whose instructions the CPU lacks skips
// its tests (REQUIRE_TARGET) rather than crash.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TEST_UNIT_TARGETCPU_H
#define LLMC_TEST_UNIT_TARGETCPU_H

#include <gtest/gtest.h>

inline bool cpuHasTheTarget() {
#if defined(__AVX512F__)
  bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#if defined(__AVX512VNNI__)
  ok = ok && __builtin_cpu_supports("avx512vnni");
#endif
  return ok;
#elif defined(__AVX2__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
#else
  return true;
#endif
}

#define REQUIRE_TARGET()                                                                           \
  do {                                                                                             \
    if (!cpuHasTheTarget())                                                                        \
      GTEST_SKIP() << "this CPU lacks the instructions this build of the test uses";              \
  } while (0)

#endif // LLMC_TEST_UNIT_TARGETCPU_H
