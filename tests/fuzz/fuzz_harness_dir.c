/* fuzz_harness_dir.c — the directory form of a harness.  A copy of
 * examples/harness is made once in a scratch directory; each input is
 * written over one of its files (or as one new file), chosen by byte 0,
 * the harness is loaded from the directory, and the file is put back. */
#include "fuzz_harness.h"

#include <sys/stat.h>

static char *fuzz_dir;

static const char *const FILES[] = {
    "harness.json", "prompt/10-persona.md", "prompt/20-reply_format.md",
    "skills/price_promo/SKILL.md", "skills/clarify/SKILL.md", "tools/get_product.json",
    "tools/check_stock.json", "prompt/99-new.md", "skills/zz_new/SKILL.md", "tools/zz_new.json",
};
#define NFILES (sizeof FILES / sizeof *FILES)

static void dir_cleanup(void)
{
    if (!fuzz_dir) return;
    char *cmd = xasprintf("rm -rf '%s'", fuzz_dir);
    if (system(cmd)) {}
    free(cmd);
}

static void dir_setup(void)
{
    const char *tmp = getenv("HAT_TEST_TMP");
    fuzz_dir = xasprintf("%s/hat-fuzz-dirXXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fuzz_dir)) { perror("mkdtemp"); abort(); }
    char *src = fuzz_top_path("examples/harness");
    char *cmd = xasprintf("cp -R '%s/.' '%s/' && mkdir -p '%s/skills/zz_new'", src, fuzz_dir, fuzz_dir);
    if (system(cmd)) { fprintf(stderr, "cannot copy %s\n", src); abort(); }
    free(cmd);
    free(src);
    atexit(dir_cleanup);
}

static void put(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f)) { perror(path); abort(); }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    if (!fuzz_dir) dir_setup();
    char *path = xasprintf("%s/%s", fuzz_dir, FILES[data[0] % NFILES]);
    size_t olen = 0;
    char *orig = NULL;
    FILE *f = fopen(path, "rb");
    if (f) {
        fclose(f);
        orig = read_file(path, &olen);
    }
    put(path, data + 1, size - 1);
    fuzz_harness_path(fuzz_dir);
    if (orig) put(path, orig, olen);
    else unlink(path);
    free(orig);
    free(path);
    return 0;
}
