/* fuzz_jsonl.c — the JSONL reader (jsonl_open/jsonl_next, plain and .gz
 * input, --skip-bad) and json_parse_named on arbitrary bytes.  Every value
 * read must serialise again (out_json's path). */
#include "fuzz.h"
#include "jsonl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(0, data, size);
    for (int skip = 0; skip < 2; skip++) {
        jsonl_reader *r = jsonl_open(path, skip);
        FUZZ_ASSERT(r);
        json_t *v;
        long last = 0;
        while (jsonl_next(r, &v) == 1) {
            FUZZ_ASSERT(jsonl_line(r) > last);
            last = jsonl_line(r);
            char *s = json_dumps(v, HAT_JSON_FLAGS | JSON_ENCODE_ANY);
            FUZZ_ASSERT(s);
            free(s);
            json_decref(v);
        }
        jsonl_close(r);
    }
    json_decref(json_parse_named((const char *)data, size, "fuzz"));
    return 0;
}
