/* hsa-bank — a reviewable rewrite bank for one harness from an external
 * rewriter (a model behind a script, hat's serve, any program): options
 * and output; the requests, checks and bank format are in
 * common/hsa_bank.c (man 1 hsa-bank). */
#include "cli.h"
#include "harness.h"
#include "hsa.h"
#include "jsonl.h"
#include "util.h"

#include <stdlib.h>

static const char usage[] =
    "usage: hsa-bank --harness H --rewrite-cmd CMD [-n N] [-o BANK.json]\n"
    "Ask CMD for train and held-out rewrites of every wording string of H and\n"
    "write the bank that hsa-augment --bank (or --vocab NAME+BANK.json) uses.\n"
    "  -H, --harness H        harness (dir, .tar[.gz], compiled .json)\n"
    "      --rewrite-cmd CMD  shell command: JSON requests on stdin, one per line,\n"
    "                         {\"id\",\"hash\",\"split\",\"kind\",\"text\",\"n\",\"keep\"};\n"
    "                         answers {\"id\",\"alternatives\":[...]} on stdout\n"
    "  -n N                   alternatives asked per text and split (default 3)\n"
    "  -o FILE  --help  --version\n";

enum { OPT_CMD = 1 };
static const struct option long_opts[] = {
    { "harness", required_argument, NULL, 'H' },
    { "rewrite-cmd", required_argument, NULL, OPT_CMD },
    { 0 },
};
static const cli_spec spec = { usage, "H:n:", long_opts };

int main(int argc, char **argv)
{
    cli_init(argc, argv);
    cli_common cc = { 0 };
    const char *hpath = NULL, *cmd = NULL;
    long n = 3;
    int opt;
    while ((opt = cli_next(argc, argv, &spec, &cc)) != -1) {
        switch (opt) {
        case 'H': hpath = optarg; break;
        case 'n': n = cli_long(&spec, "-n", optarg, 1, 100); break;
        case OPT_CMD: cmd = optarg; break;
        }
    }
    if (!hpath || !cmd) cli_usage_error(&spec, "--harness and --rewrite-cmd are required");
    if (optind < argc) cli_usage_error(&spec, "unexpected argument '%s'", argv[optind]);
    json_t *h = harness_load(hpath);
    if (!h) return EXIT_FAIL;
    json_t *bank = hsa_bank_build(h, cmd, (int)n);
    int rc = bank ? EXIT_OK : EXIT_FAIL;
    if (bank) {
        hat_out *out = out_open(cc.output);
        if (!out || out_json(out, bank) < 0 || out_close(out) < 0) rc = EXIT_FAIL;
        size_t nr = json_array_size(json_object_get(bank, "rejected"));
        if (nr) hat_warn("%zu alternative%s rejected (listed under \"rejected\")", nr, nr == 1 ? "" : "s");
    }
    json_decref(bank);
    json_decref(h);
    return rc;
}
