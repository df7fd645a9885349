/* evalset — the four evaluation sets as cases.jsonl (man 5 cases.jsonl). */
#include "cli.h"
#include "evalset.h"
#include "harness.h"
#include "harness_compile.h"
#include "jsonl.h"
#include "tasks.h"
#include "util.h"
#include "world.h"

#include <stdlib.h>

static const char usage[] =
    "usage: evalset --world FILE --harness H [--sets LIST] [-n N | --per-set N]\n"
    "               [--intents LIST] [--bank FILE] [--ifeval-input FILE] [--config FILE]\n"
    "               [--split SPLIT] [--seed N] [-o FILE]\n"
    "Write the evaluation cases (man 5 cases.jsonl), from eval splits only:\n"
    "  live     Live-Stream QA: held-out products and phrasings, production harness (2000)\n"
    "  variant  Harness-Variant QA: held-out HSA vocabulary, unseen combinations (1000)\n"
    "  robust   Tool/Prompt Robustness: faults, noisy/adversarial text, injection,\n"
    "           perturbed prompt (1000)\n"
    "  ifeval   IFEval-style: general-gen's eval split or the original prompts (541)\n"
    "  --world FILE         world.json\n"
    "  --harness H          the production harness (directory, tar or compiled JSON)\n"
    "  --sets LIST          comma-separated sets (default all)\n"
    "  -n N                 about N cases in all, in the default proportions\n"
    "  --per-set N          N cases in each set instead\n"
    "  --intents LIST       agent cases of these task-gen intents only, in turn\n"
    "                       (price,size,...: the requests the harness serves)\n"
    "  --bank FILE          a rewrite bank for H from hsa-bank: its held-out\n"
    "                       alternatives reword the variant cases\n"
    "  --ifeval-input FILE  the original IFEval input_data.jsonl for the ifeval set\n"
    "  --config FILE        sets.json to use instead of data/eval/sets.json (sizes,\n"
    "                       variant combos and vocabulary, robust text banks)\n"
    "  --split SPLIT        task-gen split of the agent tasks (eval; train for dev sets)\n"
    "  --seed N             seed (default 1); the same seed gives the same bytes\n"
    "  -o FILE              the cases (default stdout; written atomically)\n";

enum { O_WORLD = 1, O_HARNESS, O_SETS, O_IFEVAL, O_BANK, O_PER_SET, O_INTENTS, O_CONFIG, O_SPLIT };

static int emit(void *arg, json_t *c) { return out_json(arg, c); }

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        { "world", required_argument, NULL, O_WORLD }, { "harness", required_argument, NULL, O_HARNESS },
        { "sets", required_argument, NULL, O_SETS }, { "ifeval-input", required_argument, NULL, O_IFEVAL },
        { "bank", required_argument, NULL, O_BANK }, { "per-set", required_argument, NULL, O_PER_SET },
        { "intents", required_argument, NULL, O_INTENTS }, { "config", required_argument, NULL, O_CONFIG },
        { "split", required_argument, NULL, O_SPLIT },
        { 0, 0, 0, 0 } };
    cli_spec spec = { usage, "n:H:", longs };
    cli_common c = { 0 };
    const char *wpath = NULL, *hpath = NULL, *bank = NULL, *intents = NULL;
    evalset_src src = { 0 };
    int mask = (1 << EVAL_NSETS) - 1, opt;
    long n = 0, per_set = 0;
    cli_init(argc, argv);
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case O_WORLD: wpath = optarg; break;
        case 'H': case O_HARNESS: hpath = optarg; break;
        case O_IFEVAL: src.ifeval_input = optarg; break;
        case O_CONFIG: src.config = optarg; break;
        case O_SPLIT:
            if (!taskgen_split_known(optarg))
                cli_usage_error(&spec, "--split: unknown split '%s' (train or eval)", optarg);
            src.split = optarg;
            break;
        case O_BANK: bank = optarg; break;
        case 'n': n = cli_long(&spec, "-n", optarg, 1, 100000000); break;
        case O_PER_SET: per_set = cli_long(&spec, "--per-set", optarg, 1, 100000000); break;
        case O_INTENTS: intents = optarg; break;
        case O_SETS: {
            char *bad = NULL;
            mask = evalset_parse_sets(optarg, &bad);
            if (mask < 0) cli_usage_error(&spec, "unknown set '%s' (live, variant, robust, ifeval, all)", bad);
            break;
        }
        }
    }
    if (optind < argc) cli_usage_error(&spec, "unexpected argument '%s'", argv[optind]);
    if (!wpath || !hpath) cli_usage_error(&spec, "--world and --harness are required");
    if (n && per_set) cli_usage_error(&spec, "-n and --per-set are exclusive");

    world *w = world_load(wpath);
    if (!w) return EXIT_FAIL;
    json_t *h = harness_load_checked(hpath);
    if (!h) { world_free(w); return EXIT_FAIL; }
    char *err = NULL;
    evalset *e = evalset_new(w, h, &src, &err);
    int rc = EXIT_FAIL;
    if (!e) { hat_warn("%s", err); goto done; }
    if (bank && evalset_add_bank(e, bank) < 0) goto done;
    if (intents && evalset_set_intents(e, intents, &err) < 0) {
        hat_warn("--intents: unknown intent '%s' (task-gen(1) lists them)", err);
        rc = EXIT_USAGE;
        goto done;
    }
    long size[EVAL_NSETS];
    if (per_set) evalset_sizes_each(e, per_set, size);
    else evalset_sizes(e, n, size);
    hat_out *o = out_open(c.output);
    if (!o) goto done;
    if (evalset_build(e, mask, size, c.seed, emit, o, &err)) {
        if (err) hat_errat(wpath, 0, "%s", err);
        out_abort(o);
        goto done;
    }
    rc = out_close(o) ? EXIT_FAIL : EXIT_OK;
done:
    free(err);
    evalset_free(e);
    json_decref(h);
    world_free(w);
    return rc;
}
