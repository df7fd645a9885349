/* model-init — a seeded, randomly initialised checkpoint from a config. */
#include "ckpt.h"
#include "cli.h"
#include "jsonl.h"
#include "tokenizer.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: model-init (--config CFG.json | --preset NAME) [options] -o OUT.ckpt\n"
    "Write a randomly initialised Qwen3-style model as a checkpoint (man 5 ckpt).\n"
    "  --config FILE      Hugging Face config.json (Qwen3 keys)\n"
    "  --preset NAME      a named shape from data/model-presets.json (nano, micro, mini, tiny, small)\n"
    "  --vocab N          override vocab_size (with --preset and --tokenizer: the\n"
    "                     tokenizer's size)\n"
    "  --mtp N            num_nextn_predict_layers (0 or 1)\n"
    "  --mtp-weight W     weight of the MTP auxiliary loss (default 0.3)\n"
    "  --tokenizer FILE   tokenizer.json to bundle; the model's vocabulary must\n"
    "                     hold its ids\n"
    "  --std S            standard deviation of the weights (default 0.02)\n"
    "  --dtype f32|bf16   storage type of the weights (default f32)\n"
    "  --seed N           seed (default 1); same seed, same bytes\n"
    "  -o FILE            output checkpoint (required)\n";

enum { O_CONFIG = 1, O_PRESET, O_VOCAB, O_MTP, O_MTPW, O_TOK, O_STD, O_DTYPE };

static json_t *preset(const cli_spec *spec, const char *name)
{
    char *p = hat_data_path("model-presets.json");
    if (!p) hat_die("cannot find model-presets.json in the data directory");
    json_t *all = json_load_path(p);
    free(p);
    if (!all) exit(EXIT_FAIL);
    json_t *cfg = json_object_get(all, name);
    if (!json_is_object(cfg) || !strcmp(name, "note"))
        cli_usage_error(spec, "--preset: unknown preset '%s'", name);
    json_incref(cfg);
    json_decref(all);
    return cfg;
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        { "config", required_argument, NULL, O_CONFIG }, { "preset", required_argument, NULL, O_PRESET },
        { "vocab", required_argument, NULL, O_VOCAB },   { "mtp", required_argument, NULL, O_MTP },
        { "mtp-weight", required_argument, NULL, O_MTPW }, { "tokenizer", required_argument, NULL, O_TOK },
        { "std", required_argument, NULL, O_STD },       { "dtype", required_argument, NULL, O_DTYPE },
        { 0 } };
    cli_spec spec = { usage, "", longs };
    cli_common c = { 0 };
    const char *config = NULL, *pre = NULL, *tok = NULL;
    long vocab = -1, mtp = -1;
    double std = 0.02, mtpw = -1;
    int dtype = ST_F32, opt;
    cli_init(argc, argv);
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case O_CONFIG: config = optarg; break;
        case O_PRESET: pre = optarg; break;
        case O_VOCAB: vocab = cli_long(&spec, "--vocab", optarg, 1, 1 << 24); break;
        case O_MTP: mtp = cli_long(&spec, "--mtp", optarg, 0, 1); break;
        case O_MTPW: mtpw = cli_double(&spec, "--mtp-weight", optarg, 0, 100); break;
        case O_TOK: tok = optarg; break;
        case O_STD: std = cli_double(&spec, "--std", optarg, 0, 10); break;
        case O_DTYPE:
            if (!strcmp(optarg, "f32")) dtype = ST_F32;
            else if (!strcmp(optarg, "bf16")) dtype = ST_BF16;
            else cli_usage_error(&spec, "--dtype: must be f32 or bf16");
            break;
        }
    }
    if (optind < argc) cli_usage_error(&spec, "unexpected argument '%s'", argv[optind]);
    if (!config == !pre) cli_usage_error(&spec, "give exactly one of --config and --preset");
    if (!c.output || is_stdio_path(c.output)) cli_usage_error(&spec, "-o OUT.ckpt is required");

    json_t *cj = config ? json_load_path(config) : preset(&spec, pre);
    if (!cj) return EXIT_FAIL;
    if (tok) {   /* the vocabulary follows the tokenizer unless --vocab says otherwise */
        char *err = NULL;
        tokenizer *t = tok_load(tok, &err);
        if (!t) { hat_errat(tok, 0, "%s", err); free(err); json_decref(cj); return EXIT_FAIL; }
        int n = tok_vocab_size(t);
        tok_free(t);
        json_t *cv = json_object_get(cj, "vocab_size");
        if (vocab < 0 && pre) vocab = n;                 /* a preset's vocabulary is a placeholder */
        long have = vocab > 0 ? vocab : (long)json_integer_value(cv);
        if (have < n) {
            hat_errat(tok, 0, "the tokenizer has %d ids but %s is %ld", n,
                      vocab > 0 ? "--vocab" : "the config's vocab_size", have);
            json_decref(cj);
            return EXIT_FAIL;
        }
    }
    if (vocab > 0) json_object_set_new(cj, "vocab_size", json_integer(vocab));
    if (mtp >= 0) json_object_set_new(cj, "num_nextn_predict_layers", json_integer(mtp));
    if (mtpw >= 0) json_object_set_new(cj, "mtp_loss_weight", json_real(mtpw));
    model_config cfg;
    int bad = model_config_parse(&cfg, cj, config ? config : pre);
    json_decref(cj);
    if (bad) return EXIT_FAIL;

    ckpt k = { 0 };
    if (tok && !(k.tokenizer = read_file(tok, &k.tokenizer_len))) return EXIT_FAIL;
    k.m = model_new(&cfg);
    model_init_random(k.m, c.seed, (float)std);
    int rc = ckpt_save(&k, c.output, dtype);
    ckpt_free(&k);
    return rc ? EXIT_FAIL : EXIT_OK;
}
