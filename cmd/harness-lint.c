/* harness-lint — every problem of one or more harnesses, all at once, each
 * as "harness-lint: FILE: JSON_PATH: message" (or JSONL with --json). */
#include "cli.h"
#include "harness.h"
#include "harness_compile.h"
#include "jsonl.h"
#include "util.h"

#include <string.h>

static const char usage[] =
    "usage: harness-lint [--json] [--strict] [HARNESS...]\n"
    "Check harnesses (directories, .tar/.tar.gz or compiled JSON; default \".\")\n"
    "and report every problem with its file and JSON path.\n"
    "      --json     one JSON object per problem: {file,path,severity,message}\n"
    "      --strict   warnings count as errors\n"
    "  -o FILE        write the report to FILE instead of stdout (--json) / stderr\n"
    "  -h, --help     this text;  --version  the version\n";

enum { OPT_JSON = 1, OPT_STRICT };

int main(int argc, char **argv)
{
    cli_init(argc, argv);
    static const struct option longs[] = {
        { "json", no_argument, NULL, OPT_JSON }, { "strict", no_argument, NULL, OPT_STRICT }, { 0 }
    };
    cli_spec spec = { usage, "", longs };
    cli_common c = { 0 };
    int as_json = 0, strict = 0, opt;
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        if (opt == OPT_JSON) as_json = 1;
        else if (opt == OPT_STRICT) strict = 1;
    }
    hat_out *o = as_json || c.output ? out_open(c.output) : NULL;
    if ((as_json || c.output) && !o) return EXIT_FAIL;
    int bad = 0;
    for (int i = optind; i < argc || i == optind; i++) {
        const char *path = i < argc ? argv[i] : ".";
        json_t *problems = json_array(), *origins = NULL;
        json_t *h = harness_load_problems(path, &origins, problems);
        if (h) {
            json_t *more = harness_lint(h, origins);
            json_array_extend(problems, more);
            json_decref(more);
        }
        size_t k;
        json_t *p;
        json_array_foreach(problems, k, p) {
            const char *sev = json_string_value(json_object_get(p, "severity"));
            if (strcmp(sev, "warning") || strict) bad = 1;
            if (as_json) out_json(o, p);
            else harness_print_problem(o && out_file(o) ? out_file(o) : stderr, p);
        }
        if (!h) bad = 1;
        json_decref(h);
        json_decref(origins);
        json_decref(problems);
    }
    if (o && out_close(o)) return EXIT_FAIL;
    return bad ? EXIT_FAIL : EXIT_OK;
}
