/* copy-gen — copy and look-up pre-training records: chats whose answers
 * can only be produced by reading names and numbers from the context, so
 * a model trained from nothing learns to copy before it learns the agent
 * task.  The building is common/copygen.c. */
#include "cli.h"
#include "copygen.h"
#include "jsonl.h"
#include "util.h"

#include <stdlib.h>

static const char usage[] =
    "usage: copy-gen [-n N] [--turns N] [--seed N] [-o FILE]\n"
    "Chats whose answers copy a name or a number out of their context.\n"
    "  -n, --count N        number of records (default 1000)\n"
    "      --turns N        questions per record (default 3)\n"
    "      --seed N         seed (default 1); same seed, same bytes\n"
    "  -o, --output FILE    write here instead of stdout\n"
    "  -h, --help           this help;  --version  the version\n";

enum { OPT_TURNS = 1 };

static const struct option long_opts[] = {
    { "count", required_argument, NULL, 'n' },
    { "turns", required_argument, NULL, OPT_TURNS },
    { 0 },
};

int main(int argc, char **argv)
{
    cli_init(argc, argv);
    cli_spec spec = { usage, "n:", long_opts };
    cli_common c = { 0 };
    long n = 1000;
    int turns = 3, opt;
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case 'n': n = cli_long(&spec, "-n", optarg, 0, 100000000L); break;
        case OPT_TURNS: turns = (int)cli_long(&spec, "--turns", optarg, 1, 64); break;
        }
    }
    if (optind < argc) cli_usage_error(&spec, "unexpected argument \"%s\"", argv[optind]);
    char *err = NULL;
    copy_gen *g = copy_load(NULL, &err);
    if (!g) { hat_warn("%s", err); free(err); return EXIT_FAIL; }
    hat_out *out = out_open(c.output);
    if (!out) { copy_free(g); return EXIT_FAIL; }
    int status = 0;
    for (long i = 0; i < n && !status; i++) {
        json_t *rec = copy_make(g, c.seed, i, turns);
        if (out_json(out, rec)) status = -1;
        json_decref(rec);
    }
    copy_free(g);
    if (status) { out_abort(out); return EXIT_FAIL; }
    return out_close(out) ? EXIT_FAIL : EXIT_OK;
}
