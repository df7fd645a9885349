/* fuzz.h — what the fuzz targets in tests/fuzz/ share.
 *
 * Each tests/fuzz/fuzz_NAME.c defines LLVMFuzzerTestOneInput for one
 * parser.  Built two ways:
 *   - by `make fuzz`, with clang -fsanitize=fuzzer (libFuzzer's main), and
 *   - by tests/unit/test_fuzz_replay.c, which #includes every target with
 *     LLVMFuzzerTestOneInput renamed and replays the committed corpus
 *     (tests/fuzz/corpus/NAME/) through it in make check, so every crash
 *     once found stays fixed.
 * Hence the helpers here are static inline behind an include guard: one
 * copy serves all targets in the replay binary.
 *
 * Inputs that a parser needs as a file go through one memfd per process,
 * named /proc/self/fd/N: no disk traffic, no temporary files left behind. */
#ifndef HAT_FUZZ_H
#define HAT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A file holding exactly data[0..size): its path (valid until the next
 * call with the same slot).  Slots let a target keep two files at once. */
static inline const char *fuzz_file(int slot, const void *data, size_t size)
{
    static int fd[4] = { -1, -1, -1, -1 };
    static char path[4][64];
    if (fd[slot] < 0) {
        fd[slot] = memfd_create("hat-fuzz", 0);
        if (fd[slot] < 0) { perror("memfd_create"); abort(); }
        snprintf(path[slot], sizeof path[slot], "/proc/self/fd/%d", fd[slot]);
    }
    if (ftruncate(fd[slot], 0) || (size && pwrite(fd[slot], data, size, 0) != (ssize_t)size)) {
        perror("fuzz_file");
        abort();
    }
    return path[slot];
}

/* A NUL-terminated copy of the input (parsers that take C strings). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) abort();
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}

/* A path under the source tree: $HAT_TOP (set by tests/run.sh and
 * tests/fuzz/run.sh) or the working directory. */
static inline char *fuzz_top_path(const char *rel)
{
    const char *top = getenv("HAT_TOP");
    return xasprintf("%s/%s", top && *top ? top : ".", rel);
}

/* Check an invariant: a failure is a crash, so libFuzzer keeps the input. */
#define FUZZ_ASSERT(c) do { if (!(c)) { \
    fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #c); abort(); } } while (0)

#endif
