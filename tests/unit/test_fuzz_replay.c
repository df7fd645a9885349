/* test_fuzz_replay.c — every fuzz target (tests/fuzz/fuzz_*.c) run over its
 * committed corpus, tests/fuzz/corpus/NAME/, without libFuzzer: the seeds
 * and every input that once crashed a parser (crash-*) must now pass
 * through cleanly, under the sanitizers too (make check SAN=1).  Each
 * target is #included with LLVMFuzzerTestOneInput renamed, so this binary
 * is the one place that links them all.  Diagnostics the parsers print
 * about bad input go to /dev/null; "# NAME/FILE" on stdout says which
 * input was running if one crashes. */
#include "test.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#define LLVMFuzzerTestOneInput fuzz_jsonl
#include "../fuzz/fuzz_jsonl.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_safetensors
#include "../fuzz/fuzz_safetensors.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_chat_parse
#include "../fuzz/fuzz_chat_parse.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_tokenizer_json
#include "../fuzz/fuzz_tokenizer_json.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_tok_encode
#include "../fuzz/fuzz_tok_encode.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_harness
#include "../fuzz/fuzz_harness.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_harness_tar
#include "../fuzz/fuzz_harness_tar.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_harness_dir
#include "../fuzz/fuzz_harness_dir.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_hsa
#include "../fuzz/fuzz_hsa.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_ckpt
#include "../fuzz/fuzz_ckpt.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_serve
#include "../fuzz/fuzz_serve.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_serve_sched
#include "../fuzz/fuzz_serve_sched.c"
#undef LLVMFuzzerTestOneInput

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run fn over every file of corpus/name; returns the number of inputs. */
static int replay(const char *name, int (*fn)(const uint8_t *, size_t))
{
    char *rel = xasprintf("tests/fuzz/corpus/%s", name);
    char *dir = fuzz_top_path(rel);
    free(rel);
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d) { free(dir); return 0; }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            names = realloc(names, (n + 1) * sizeof *names);
            names[n++] = xstrdup(e->d_name);
        }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    int saved = dup(2), null = open("/dev/null", O_WRONLY);
    for (size_t i = 0; i < n; i++) {
        char *path = xasprintf("%s/%s", dir, names[i]);
        size_t len;
        char *data = read_file(path, &len);
        CHECK(data != NULL);
        printf("# %s/%s\n", name, names[i]);
        fflush(stdout);
        dup2(null, 2);
        if (data) fn((const uint8_t *)data, len);
        dup2(saved, 2);
        free(data);
        free(path);
        free(names[i]);
    }
    close(null);
    close(saved);
    free(names);
    free(dir);
    return (int)n;
}

#define REPLAY(name, min) static void replay_##name(void) { CHECK(replay(#name, fuzz_##name) >= min); }
REPLAY(jsonl, 4)
REPLAY(safetensors, 3)
REPLAY(chat_parse, 6)
REPLAY(tokenizer_json, 1)
REPLAY(tok_encode, 5)
REPLAY(harness, 3)
REPLAY(harness_tar, 4)
REPLAY(harness_dir, 10)
REPLAY(hsa, 5)
REPLAY(ckpt, 5)
REPLAY(serve, 8)
REPLAY(serve_sched, 6)

int main(void)
{
    hat_prog = "test_fuzz_replay";
    RUN(replay_jsonl);
    RUN(replay_safetensors);
    RUN(replay_chat_parse);
    RUN(replay_tokenizer_json);
    RUN(replay_tok_encode);
    RUN(replay_harness);
    RUN(replay_harness_tar);
    RUN(replay_harness_dir);
    RUN(replay_hsa);
    RUN(replay_ckpt);
    RUN(replay_serve);
    RUN(replay_serve_sched);
    fuzz_serve_sched_free();
    if (fuzz_tok) tok_free(fuzz_tok);
    TEST_MAIN_END();
}
