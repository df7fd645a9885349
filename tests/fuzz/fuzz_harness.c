/* fuzz_harness.c — harness_load on arbitrary bytes in a file: the compiled
 * JSON form, and (when the bytes do not look like JSON) any archive
 * libarchive recognises, then everything that consumes a loaded harness
 * (fuzz_harness.h). */
#include "fuzz_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_harness_path(fuzz_file(0, data, size));
    return 0;
}
