/* harness-pack — a harness directory or tarball → the compiled JSON form.
 * The output is canonical (man 5 harness key order, compact, one line), so
 * packing the same harness twice gives the same bytes. */
#include "cli.h"
#include "harness.h"
#include "harness_compile.h"
#include "jsonl.h"
#include "util.h"

#include <string.h>

static const char usage[] =
    "usage: harness-pack [-o FILE] [HARNESS]\n"
    "Compile a harness (directory, .tar, .tar.gz or compiled JSON; default \".\")\n"
    "into one JSON object on stdout or FILE.\n"
    "  -o FILE      write FILE atomically instead of stdout\n"
    "  -h, --help   this text;  --version  the version\n";

int main(int argc, char **argv)
{
    cli_init(argc, argv);
    cli_spec spec = { usage, "", NULL };
    cli_common c = { 0 };
    while (cli_next(argc, argv, &spec, &c) != -1) {}
    if (argc - optind > 1) cli_usage_error(&spec, "one harness at a time");
    const char *in = optind < argc ? argv[optind] : ".";
    json_t *h = harness_load_checked(in);
    if (!h) return EXIT_FAIL;
    harness_canonicalize(h);
    /* JSON escaping can make the compiled form larger than the files it
     * came from: never write what harness_load would refuse to read back */
    char *text = json_compact(h);
    size_t n = text ? strlen(text) + 1 : 0;
    free(text);
    if (n > HARNESS_MAX_BYTES) {
        hat_errat(in, 0, "the compiled harness would be %zu bytes; a harness may hold at most %u", n,
                  HARNESS_MAX_BYTES);
        json_decref(h);
        return EXIT_FAIL;
    }
    hat_out *o = out_open(c.output);
    int rc = o && out_json(o, h) == 0 && out_close(o) == 0 ? EXIT_OK : EXIT_FAIL;
    json_decref(h);
    return rc;
}
