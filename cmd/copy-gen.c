/* copy-gen — copy and look-up pre-training records: chats whose answers
 * can only be produced by reading names and numbers from the context, so
 * a model trained from nothing learns to copy before it learns the agent
 * task.  The building is common/copygen.c. */
#include "cli.h"
#include "copygen.h"
#include "harness.h"
#include "jsonl.h"
#include "tokenizer.h"
#include "util.h"

#include <stdlib.h>

static const char usage[] =
    "usage: copy-gen [-n N] [--turns N] [--pick P [--pick-echo E] [--pick-line T]]\n"
    "                [--seed N] [-o FILE]\n"
    "       copy-gen --ids --tokenizer FILE [--min-len N] [--max-len N]\n"
    "                [--haystack LEN [--pairs N]] [-n N] [--seed N] [-o FILE]\n"
    "Chats whose answers copy a name or a number out of their context; with\n"
    "--ids, runs of random token ids said twice (the induction curriculum).\n"
    "  -n, --count N        number of records (default 1000)\n"
    "      --turns N        questions per record (default 3)\n"
    "      --pick P         share of records (0-1, default 0) that open a routine\n"
    "                       found by what its line says it is for\n"
    "      --pick-echo E    share of pick questions (0-1, default 0) that say\n"
    "                       the routine's line itself (the look-up's first step)\n"
    "      --pick-line T    each listed routine's line, as a harness's\n"
    "                       skill_loader.line (default \"- {name}: {description}\")\n"
    "      --ids            {\"ids\",\"mask\"} records: a run of ordinary ids of\n"
    "                       --tokenizer, then the run again (loss on the repeat)\n"
    "      --tokenizer FILE tokenizer.json whose ordinary ids --ids draws\n"
    "      --min-len N      shortest run (default 4)\n"
    "      --max-len N      longest run (default 32)\n"
    "      --haystack LEN   --ids records of LEN random ids in which --pairs\n"
    "                       runs each stand twice at random places\n"
    "      --pairs N        runs per --haystack record (default 4)\n"
    "      --seed N         seed (default 1); same seed, same bytes\n"
    "  -o, --output FILE    write here instead of stdout\n"
    "  -h, --help           this help;  --version  the version\n";

enum { OPT_TURNS = 1, OPT_PICK, OPT_ECHO, OPT_LINE, OPT_IDS, OPT_TOKENIZER, OPT_MIN_LEN, OPT_MAX_LEN, OPT_HAYSTACK, OPT_PAIRS };

static const struct option long_opts[] = {
    { "count", required_argument, NULL, 'n' },
    { "turns", required_argument, NULL, OPT_TURNS },
    { "pick", required_argument, NULL, OPT_PICK },
    { "pick-echo", required_argument, NULL, OPT_ECHO },
    { "pick-line", required_argument, NULL, OPT_LINE },
    { "ids", no_argument, NULL, OPT_IDS },
    { "tokenizer", required_argument, NULL, OPT_TOKENIZER },
    { "min-len", required_argument, NULL, OPT_MIN_LEN },
    { "max-len", required_argument, NULL, OPT_MAX_LEN },
    { "haystack", required_argument, NULL, OPT_HAYSTACK },
    { "pairs", required_argument, NULL, OPT_PAIRS },
    { 0 },
};

int main(int argc, char **argv)
{
    cli_init(argc, argv);
    cli_spec spec = { usage, "n:", long_opts };
    cli_common c = { 0 };
    long n = 1000;
    copy_opts o = { 3, 0, 0, NULL };
    int ids = 0, min_len = 4, max_len = 32, haystack = 0, pairs = 4, opt;
    const char *tok = NULL;
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case 'n': n = cli_long(&spec, "-n", optarg, 0, 100000000L); break;
        case OPT_TURNS: o.turns = (int)cli_long(&spec, "--turns", optarg, 1, 64); break;
        case OPT_PICK: o.pick = cli_double(&spec, "--pick", optarg, 0, 1); break;
        case OPT_ECHO: o.echo = cli_double(&spec, "--pick-echo", optarg, 0, 1); break;
        case OPT_LINE: o.line = optarg; break;
        case OPT_IDS: ids = 1; break;
        case OPT_TOKENIZER: tok = optarg; break;
        case OPT_MIN_LEN: min_len = (int)cli_long(&spec, "--min-len", optarg, 1, 4096); break;
        case OPT_MAX_LEN: max_len = (int)cli_long(&spec, "--max-len", optarg, 1, 4096); break;
        case OPT_HAYSTACK: haystack = (int)cli_long(&spec, "--haystack", optarg, 2, 65536); break;
        case OPT_PAIRS: pairs = (int)cli_long(&spec, "--pairs", optarg, 1, 4096); break;
        }
    }
    if (optind < argc) cli_usage_error(&spec, "unexpected argument \"%s\"", argv[optind]);
    if (ids && !tok) cli_usage_error(&spec, "--ids needs --tokenizer");
    if (ids && o.pick > 0) cli_usage_error(&spec, "--pick is for the chats, not --ids");
    if (o.echo > 0 && !(o.pick > 0)) cli_usage_error(&spec, "--pick-echo needs --pick");
    if (o.line && !(o.pick > 0)) cli_usage_error(&spec, "--pick-line needs --pick");
    if (o.line && harness_skill_line_error(o.line))
        cli_usage_error(&spec, "--pick-line %s", harness_skill_line_error(o.line));
    if (!ids && tok) cli_usage_error(&spec, "--tokenizer is for --ids");
    if (haystack && !ids) cli_usage_error(&spec, "--haystack is for --ids");
    if (haystack && 2 * max_len > haystack)
        cli_usage_error(&spec, "--haystack %d has no room for two runs of --max-len %d", haystack, max_len);
    if (min_len > max_len) cli_usage_error(&spec, "--min-len %d is above --max-len %d", min_len, max_len);
    /* --ids draws the tokenizer's ordinary ids, so no run holds
     * <|im_end|> or <tool_call>; otherwise the chats' data files. */
    copy_gen *g = NULL;
    int *pool = NULL;
    size_t npool = 0;
    char *err = NULL;
    if (ids) {
        tokenizer *t = tok_load(tok, &err);
        if (!t) { hat_warn("%s", err); free(err); return EXIT_FAIL; }
        npool = tok_ordinary_ids(t, &pool);
        tok_free(t);
        if (!npool) { hat_warn("%s: the tokenizer has no ordinary ids", tok); free(pool); return EXIT_FAIL; }
    } else if (!(g = copy_load(NULL, &err))) {
        hat_warn("%s", err); free(err); return EXIT_FAIL;
    }
    hat_out *out = out_open(c.output);
    int status = out ? 0 : -1;
    for (long i = 0; i < n && !status; i++) {
        json_t *rec = haystack ? copy_make_haystack(pool, npool, haystack, pairs, min_len, max_len, c.seed, i)
                    : ids      ? copy_make_ids(pool, npool, min_len, max_len, c.seed, i)
                               : copy_make(g, c.seed, i, &o);
        if (out_json(out, rec)) status = -1;
        json_decref(rec);
    }
    copy_free(g);
    free(pool);
    if (!out) return EXIT_FAIL;
    if (status) { out_abort(out); return EXIT_FAIL; }
    return out_close(out) ? EXIT_FAIL : EXIT_OK;
}
