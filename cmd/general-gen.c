/* general-gen — general instruction-following records (the stand-in for
 * Tulu 3): tasks with IFEval-verifiable constraints and responses checked
 * to satisfy them, or external chat data normalised with --import.  The
 * building is common/general.c. */
#include "cli.h"
#include "general.h"
#include "jsonl.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: general-gen [--split base|opd|eval|dev] [-n N] [--seed N] [-o FILE]\n"
    "       general-gen --import FILE [--split S] [-o FILE]\n"
    "General instruction-following records with IFEval-verifiable constraints.\n"
    "      --split NAME     base (training), opd (OPD prompts), eval, or dev (choosing\n"
    "                       settings; its own wording) (default base)\n"
    "  -n, --count N        number of records (default 100)\n"
    "      --tries N        draws per record before it is dropped (default 20)\n"
    "      --import FILE    normalise Tulu 3 / OpenAI messages JSONL instead\n"
    "      --seed N         seed (default 1); same seed, same bytes\n"
    "  -o, --output FILE    write here instead of stdout\n"
    "      --skip-bad       with --import: skip bad records and report how many\n"
    "  -h, --help           this help;  --version  the version\n";

enum { OPT_SPLIT = 1, OPT_TRIES, OPT_IMPORT };

static const struct option long_opts[] = {
    { "split",  required_argument, NULL, OPT_SPLIT },
    { "count",  required_argument, NULL, 'n' },
    { "tries",  required_argument, NULL, OPT_TRIES },
    { "import", required_argument, NULL, OPT_IMPORT },
    { 0 },
};

static int do_import(const char *path, int split, int skip_bad, hat_out *out)
{
    jsonl_reader *r = jsonl_open(path, skip_bad);
    if (!r) return -1;
    json_t *rec;
    long index = 0, bad = 0;
    int rc, status = 0;
    while ((rc = jsonl_next(r, &rec)) == 1) {
        char *err = NULL;
        json_t *o = json_is_object(rec) ? general_import(rec, split, index, &err) : NULL;
        if (!o) {
            hat_errat(jsonl_name(r), jsonl_line(r), "%s", err ? err : "not a JSON object");
            free(err);
            json_decref(rec);
            if (!skip_bad) { status = -1; break; }
            bad++;
            continue;
        }
        index++;
        if (out_json(out, o)) status = -1;
        json_decref(o);
        json_decref(rec);
        if (status) break;
    }
    if (rc < 0) status = -1;
    if (jsonl_close(r)) status = -1;
    if (bad) hat_warn("skipped %ld bad record%s", bad, bad == 1 ? "" : "s");
    return status;
}

static int do_generate(int split, long n, int tries, uint64_t seed, hat_out *out)
{
    char *err = NULL;
    general_gen *g = general_load(NULL, &err);
    if (!g) { hat_warn("%s", err); free(err); return -1; }
    long dropped = 0, redrawn = 0;
    int status = 0;
    for (long i = 0; i < n && !status; i++) {
        int re;
        json_t *rec = general_make(g, split, seed, i, tries, &re);
        redrawn += re;
        if (!rec) { dropped++; continue; }
        if (out_json(out, rec)) status = -1;
        json_decref(rec);
    }
    if (dropped || redrawn)
        hat_warn("%ld draw%s failed the IFEval check and %s redrawn; %ld record%s dropped",
                 redrawn, redrawn == 1 ? "" : "s", redrawn == 1 ? "was" : "were",
                 dropped, dropped == 1 ? "" : "s");
    general_free(g);
    return status;
}

int main(int argc, char **argv)
{
    cli_init(argc, argv);
    cli_spec spec = { usage, "n:", long_opts };
    cli_common c = { 0 };
    const char *import = NULL;
    int split = 0, tries = 20, opt;
    long n = 100;
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case OPT_SPLIT:
            if ((split = general_split(optarg)) < 0)
                cli_usage_error(&spec, "--split must be base, opd, eval or dev, not \"%s\"", optarg);
            break;
        case 'n': n = cli_long(&spec, "-n", optarg, 0, 100000000L); break;
        case OPT_TRIES: tries = (int)cli_long(&spec, "--tries", optarg, 1, 1000); break;
        case OPT_IMPORT: import = optarg; break;
        }
    }
    if (optind < argc) cli_usage_error(&spec, "unexpected argument \"%s\"", argv[optind]);
    hat_out *out = out_open(c.output);
    if (!out) return EXIT_FAIL;
    int status = import ? do_import(import, split, c.skip_bad, out) : do_generate(split, n, tries, c.seed, out);
    if (status) { out_abort(out); return EXIT_FAIL; }
    return out_close(out) ? EXIT_FAIL : EXIT_OK;
}
