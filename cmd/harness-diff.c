/* harness-diff — what changed between two harnesses, by function, as JSONL
 * (default) or readable text.  Exit status as diff(1): 0 same, 1 differ,
 * 2 trouble. */
#include "cli.h"
#include "harness.h"
#include "harness_compile.h"
#include "jsonl.h"
#include "util.h"

#include <stdlib.h>

static const char usage[] =
    "usage: harness-diff [--text] [-o FILE] A B\n"
    "Report what changed from harness A to harness B (directories, archives\n"
    "or compiled JSON), matched by function: one JSON object per change.\n"
    "      --text     readable lines instead of JSON\n"
    "  -o FILE        write to FILE instead of stdout\n"
    "  -h, --help     this text;  --version  the version\n"
    "Exit status: 0 identical, 1 different, 2 trouble.\n";

enum { OPT_TEXT = 1 };

int main(int argc, char **argv)
{
    cli_init(argc, argv);
    static const struct option longs[] = { { "text", no_argument, NULL, OPT_TEXT }, { 0 } };
    cli_spec spec = { usage, "", longs };
    cli_common c = { 0 };
    int text = 0, opt;
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1)
        if (opt == OPT_TEXT) text = 1;
    if (argc - optind != 2) cli_usage_error(&spec, "two harnesses to compare");
    json_t *a = harness_load_checked(argv[optind]);
    json_t *b = a ? harness_load_checked(argv[optind + 1]) : NULL;
    if (!a || !b) {
        json_decref(a);
        return EXIT_USAGE;   /* trouble, as diff(1) */
    }
    json_t *d = harness_diff(a, b);
    hat_out *o = out_open(c.output);
    int rc = o ? EXIT_OK : EXIT_USAGE;
    size_t i;
    json_t *ch;
    json_array_foreach(d, i, ch) {
        if (!o) break;
        if (text) {
            char *s = harness_diff_text(ch);
            out_puts(o, s);
            out_puts(o, "\n");
            free(s);
        } else if (out_json(o, ch)) rc = EXIT_USAGE;
    }
    if (o && out_close(o)) rc = EXIT_USAGE;
    if (rc == EXIT_OK && json_array_size(d)) rc = EXIT_FAIL;
    json_decref(d);
    json_decref(a);
    json_decref(b);
    return rc;
}
