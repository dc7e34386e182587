// core/per_entry.hpp — TALLY_PER_ENTRY marks the few functions whose loops run once
// per LN entry on every token hop: the codec's copies and the release scan. On
// x86-64 ELF with GCC 12+ or Clang 14+ they are compiled three times (baseline,
// x86-64-v3: AVX2, x86-64-v4: AVX-512) and the loader binds each to the
// widest the CPU runs (an ifunc), so a default build gets the vector width a
// -march=native build would (docs/design.md, "The per-entry loops are built for
// three vector widths"). Elsewhere, with TALLY_NO_ISA_CLONES defined (CMake:
// -DTALLY_ISA_CLONES=OFF), or under ThreadSanitizer or MemorySanitizer (an
// instrumented ifunc resolver in an executable runs before their runtime is ready:
// a TSan build crashes at load), it is empty. Mark only functions internal to their
// file (static or in an unnamed namespace) and call them from there: Clang names
// the dispatcher apart from the plain symbol, so another file could not link to it.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define TALLY_NO_IFUNC_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define TALLY_NO_IFUNC_SANITIZER 1
#endif
#endif

#if !defined(TALLY_NO_ISA_CLONES) && !defined(TALLY_NO_IFUNC_SANITIZER) && defined(__x86_64__) && defined(__ELF__) && \
    ((defined(__clang__) && __clang_major__ >= 14) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 12))
#define TALLY_PER_ENTRY __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define TALLY_PER_ENTRY
#endif
