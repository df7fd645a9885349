/* copy-gen — copy and look-up pre-training records: chats whose answers
 * can only be produced by reading names and numbers from the context, so
 * a model trained from nothing learns to copy before it learns the agent
 * task.  The building is common/copygen.c. */
#include "cli.h"
#include "copygen.h"
#include "jsonl.h"
#include "tokenizer.h"
#include "util.h"

#include <stdlib.h>

static const char usage[] =
    "usage: copy-gen [-n N] [--turns N] [--seed N] [-o FILE]\n"
    "       copy-gen --ids --tokenizer FILE [--min-len N] [--max-len N] [-n N] [--seed N] [-o FILE]\n"
    "Chats whose answers copy a name or a number out of their context; with\n"
    "--ids, runs of random token ids said twice (the induction curriculum).\n"
    "  -n, --count N        number of records (default 1000)\n"
    "      --turns N        questions per record (default 3)\n"
    "      --ids            {\"ids\",\"mask\"} records: a run of ordinary ids of\n"
    "                       --tokenizer, then the run again (loss on the repeat)\n"
    "      --tokenizer FILE tokenizer.json whose ordinary ids --ids draws\n"
    "      --min-len N      shortest run (default 4)\n"
    "      --max-len N      longest run (default 32)\n"
    "      --seed N         seed (default 1); same seed, same bytes\n"
    "  -o, --output FILE    write here instead of stdout\n"
    "  -h, --help           this help;  --version  the version\n";

enum { OPT_TURNS = 1, OPT_IDS, OPT_TOKENIZER, OPT_MIN_LEN, OPT_MAX_LEN };

static const struct option long_opts[] = {
    { "count", required_argument, NULL, 'n' },
    { "turns", required_argument, NULL, OPT_TURNS },
    { "ids", no_argument, NULL, OPT_IDS },
    { "tokenizer", required_argument, NULL, OPT_TOKENIZER },
    { "min-len", required_argument, NULL, OPT_MIN_LEN },
    { "max-len", required_argument, NULL, OPT_MAX_LEN },
    { 0 },
};

/* --ids: the tokenizer's ordinary ids (never an added token, so no run
 * holds <|im_end|> or <tool_call>). */
static int ordinary_ids(const char *path, int **ids, size_t *n)
{
    char *err = NULL;
    tokenizer *t = tok_load(path, &err);
    if (!t) { hat_warn("%s", err); free(err); return -1; }
    int v = tok_vocab_size(t);
    *ids = xmalloc((size_t)(v > 0 ? v : 1) * sizeof **ids);
    *n = 0;
    for (int i = 0; i < v; i++)
        if (tok_token_str(t, i) && !tok_is_added(t, i)) (*ids)[(*n)++] = i;
    tok_free(t);
    if (!*n) { hat_warn("%s: the tokenizer has no ordinary ids", path); free(*ids); return -1; }
    return 0;
}

static int write_ids(hat_out *out, const char *tok, long n, int min_len, int max_len, uint64_t seed)
{
    int *ids;
    size_t nids;
    if (ordinary_ids(tok, &ids, &nids)) return -1;
    int status = 0;
    for (long i = 0; i < n && !status; i++) {
        json_t *rec = copy_make_ids(ids, nids, min_len, max_len, seed, i);
        if (out_json(out, rec)) status = -1;
        json_decref(rec);
    }
    free(ids);
    return status;
}

int main(int argc, char **argv)
{
    cli_init(argc, argv);
    cli_spec spec = { usage, "n:", long_opts };
    cli_common c = { 0 };
    long n = 1000;
    int turns = 3, ids = 0, min_len = 4, max_len = 32, opt;
    const char *tok = NULL;
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case 'n': n = cli_long(&spec, "-n", optarg, 0, 100000000L); break;
        case OPT_TURNS: turns = (int)cli_long(&spec, "--turns", optarg, 1, 64); break;
        case OPT_IDS: ids = 1; break;
        case OPT_TOKENIZER: tok = optarg; break;
        case OPT_MIN_LEN: min_len = (int)cli_long(&spec, "--min-len", optarg, 1, 4096); break;
        case OPT_MAX_LEN: max_len = (int)cli_long(&spec, "--max-len", optarg, 1, 4096); break;
        }
    }
    if (optind < argc) cli_usage_error(&spec, "unexpected argument \"%s\"", argv[optind]);
    if (ids && !tok) cli_usage_error(&spec, "--ids needs --tokenizer");
    if (!ids && tok) cli_usage_error(&spec, "--tokenizer is for --ids");
    if (min_len > max_len) cli_usage_error(&spec, "--min-len %d is above --max-len %d", min_len, max_len);
    if (ids) {
        hat_out *out = out_open(c.output);
        if (!out) return EXIT_FAIL;
        if (write_ids(out, tok, n, min_len, max_len, c.seed)) { out_abort(out); return EXIT_FAIL; }
        return out_close(out) ? EXIT_FAIL : EXIT_OK;
    }
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
