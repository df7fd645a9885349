/* fuzz_safetensors.c — st_parse on arbitrary bytes; every tensor of a file
 * that parses must convert to float32 without reading outside the file. */
#include "fuzz.h"
#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) abort();
    memcpy(buf, data, size);
    st_file *f = st_parse(buf, size, "fuzz.safetensors");
    if (!f) return 0;
    for (int i = 0; i < f->n; i++) {
        const st_tensor *t = &f->t[i];
        FUZZ_ASSERT(f->data_start + t->end <= f->size);
        FUZZ_ASSERT(t->numel * (size_t)st_dtype_size(t->dtype) == t->end - t->begin);
        FUZZ_ASSERT(st_find(f, t->name) != NULL);
        float *out = malloc((t->numel ? t->numel : 1) * sizeof *out);
        if (!out) abort();
        st_read_f32(f, t, out);
        free(out);
    }
    st_close(f);
    return 0;
}
