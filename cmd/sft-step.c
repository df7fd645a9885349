/* sft-step — supervised fine-tuning (or plain language-model training) of a
 * checkpoint on text, trajectories or pre-tokenised sequences: N AdamW
 * steps per invocation, exact resume from the trainer state stored in the
 * output checkpoint. */
#include "ckpt.h"
#include "cli.h"
#include "cuda/device.h"
#include "generate.h"
#include "harness.h"
#include "harness_compile.h"
#include "jsonl.h"
#include "train.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "usage: sft-step --init CKPT --data DATA.jsonl --steps N [options] -o OUT.ckpt\n"
    "Train a checkpoint on JSONL records: {\"text\"} (language modelling),\n"
    "trajectories {\"messages\",\"harness\"?} (loss on what the assistant wrote),\n"
    "or pre-tokenised {\"ids\":[...],\"mask\":[0/1...]} (mask 1 = a loss target).\n"
    "The output checkpoint carries the optimiser moments and trainer_state.json,\n"
    "so --resume continues exactly.\n"
    "  --init CKPT        checkpoint or Hugging Face directory to start from\n"
    "  --data FILE        training sequences (\"-\" = stdin, .gz ok)\n"
    "  --steps N          optimiser steps to take in this run\n"
    "  --resume           continue the run stored in --init (step, data position,\n"
    "                     optimiser moments and settings; options below ignored)\n"
    "  --tokenizer FILE   tokenizer.json for text and trajectories (default: the\n"
    "                     checkpoint's own)\n"
    "  --harness H        harness for trajectories without an inline one\n"
    "  --no-bucket        pad every micro-batch to --seq instead of grouping\n"
    "                     sequences by length\n"
    "  --batch B          sequences per micro-batch (default 8)\n"
    "  --seq T            tokens per sequence; longer ones are cut (default 256,\n"
    "                     at most max_position_embeddings); data with no loss\n"
    "                     target left within T+1 tokens is refused\n"
    "  --accum A          micro-batches per step (gradient accumulation, default 1)\n"
    "  --lr X             peak learning rate (default 3e-4)\n"
    "  --min-lr X         final learning rate of the decay (default 0)\n"
    "  --warmup N         linear warmup steps (default 0)\n"
    "  --schedule S       cosine | linear | constant (default cosine)\n"
    "  --total-steps N    length of the schedule (default: --steps)\n"
    "  --weight-decay X   AdamW decoupled decay on matrices (default 0.1)\n"
    "  --beta2 X          AdamW beta2 (default 0.95)\n"
    "  --clip X           max global gradient norm, 0 = off (default 1.0)\n"
    "  --metrics FILE     append one JSON line per step (step, loss, lr, grad_norm,\n"
    "                     tokens and tokens_per_s: trained tokens (loss targets),\n"
    "                     tokens_processed and tokens_processed_per_s: positions\n"
    "                     computed, padding included; device)\n"
    "  --save-every K     also write -o every K steps\n"
    "  --seed N           data order seed (default 1)\n"
    "  --device D         cpu | cuda | auto (default cpu; auto = cuda when a GPU\n"
    "                     is present); checkpoints are the same either way\n"
    "  --precision P      on cuda: bf16 (default: bf16 weights and activations,\n"
    "                     fp32 master weights, moments and gradients) or fp32\n"
    "  --skip-bad         skip malformed data lines\n"
    "  -o FILE            output checkpoint (required)\n";

enum { O_INIT = 1, O_DATA, O_STEPS, O_RESUME, O_BATCH, O_SEQ, O_ACCUM,
       O_METRICS, O_SAVE, O_TOK, O_HARNESS, O_NOBUCKET, O_DEVICE, O_PRECISION };

typedef struct { ckpt *k; const train_data *d; train_device *dev; } sft_ctx;

/* One optimiser step for train_run: its metrics line and status. */
static int sft_one(void *ctx, train_state *s, json_t **line, char *status, size_t n, char **err)
{
    sft_ctx *x = ctx;
    double t0 = hat_now();
    train_result r;
    train_step_on(x->dev, x->k, x->d, s, &r);
    double dt = hat_now() - t0, tps = r.tokens / (dt > 0 ? dt : 1e-9), pps = r.processed / (dt > 0 ? dt : 1e-9);
    *line = json_pack("{s:I,s:f,s:f,s:f,s:I,s:f,s:I,s:f,s:s}", "step", (json_int_t)s->step, "loss", r.loss,
                      "lr", (double)r.lr, "grad_norm", r.grad_norm, "tokens", (json_int_t)r.tokens,
                      "tokens_per_s", tps, "tokens_processed", (json_int_t)r.processed,
                      "tokens_processed_per_s", pps, "device", train_device_name(x->dev));
    /* Both rates: a trajectory's loss covers only what the assistant wrote
     * (a few percent of its tokens), so the trained rate alone looks slow. */
    snprintf(status, n, "loss %.4f  lr %.2e  |g| %.3f  %.0f tok/s processed, %.0f trained",
             r.loss, r.lr, r.grad_norm, pps, tps);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        { "init", required_argument, NULL, O_INIT },     { "data", required_argument, NULL, O_DATA },
        { "steps", required_argument, NULL, O_STEPS },   { "resume", no_argument, NULL, O_RESUME },
        { "batch", required_argument, NULL, O_BATCH },   { "seq", required_argument, NULL, O_SEQ },
        { "accum", required_argument, NULL, O_ACCUM },
        { "metrics", required_argument, NULL, O_METRICS },
        { "save-every", required_argument, NULL, O_SAVE }, { "tokenizer", required_argument, NULL, O_TOK },
        { "harness", required_argument, NULL, O_HARNESS }, { "no-bucket", no_argument, NULL, O_NOBUCKET },
        { "device", required_argument, NULL, O_DEVICE }, { "precision", required_argument, NULL, O_PRECISION },
        OPTIM_LONG_OPTIONS,
        { 0 } };
    cli_spec spec = { usage, "", longs };
    cli_common c = { 0 };
    const char *init = NULL, *data = NULL, *metrics = NULL, *tok_path = NULL, *hpath = NULL;
    long steps = -1, save_every = 0;
    int resume = 0, seq_set = 0, opt, precision = MC_BF16;
    hat_device device = HAT_DEVICE_CPU;
    train_state s = { 0 };
    optim_defaults(&s.opt);
    s.B = 8; s.T = 256; s.accum = 1; s.bucket = 1;
    cli_init(argc, argv);
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        if (optim_cli(&spec, opt, optarg, &s.opt)) continue;
        switch (opt) {
        case O_INIT: init = optarg; break;
        case O_DATA: data = optarg; break;
        case O_STEPS: steps = cli_long(&spec, "--steps", optarg, 0, 1L << 40); break;
        case O_RESUME: resume = 1; break;
        case O_BATCH: s.B = (int)cli_long(&spec, "--batch", optarg, 1, 1 << 16); break;
        case O_SEQ: s.T = (int)cli_long(&spec, "--seq", optarg, 1, 1 << 20); seq_set = 1; break;
        case O_ACCUM: s.accum = (int)cli_long(&spec, "--accum", optarg, 1, 1 << 16); break;
        case O_METRICS: metrics = optarg; break;
        case O_SAVE: save_every = cli_long(&spec, "--save-every", optarg, 1, 1L << 40); break;
        case O_TOK: tok_path = optarg; break;
        case O_HARNESS: hpath = optarg; break;
        case O_NOBUCKET: s.bucket = 0; break;
        case O_DEVICE: device = gen_device_arg(&spec, optarg); break;
        case O_PRECISION: precision = gen_precision_arg(&spec, optarg); break;
        }
    }
    if (optind < argc) cli_usage_error(&spec, "unexpected argument '%s'", argv[optind]);
    if (!init || !data || steps < 0) cli_usage_error(&spec, "--init, --data and --steps are required");
    if (!c.output || is_stdio_path(c.output)) cli_usage_error(&spec, "-o OUT.ckpt is required");

    ckpt k;
    if (ckpt_load(&k, init)) return EXIT_FAIL;
    model *m = k.m;
    if (train_begin(&k, &s, resume, NULL, c.seed, steps, init)) { ckpt_free(&k); return EXIT_FAIL; }
    if (!seq_set && !resume && s.T > m->cfg.max_position_embeddings) s.T = m->cfg.max_position_embeddings;
    if (s.T > m->cfg.max_position_embeddings)
        cli_usage_error(&spec, "--seq %d exceeds max_position_embeddings %d", s.T, m->cfg.max_position_embeddings);
    train_device td;   /* before the data: a missing GPU is reported at once */
    if (train_device_open(&td, &k, device, precision, s.accum)) { ckpt_free(&k); return EXIT_FAIL; }
    train_data d;
    train_encoder enc = { NULL, NULL };
    json_t *h = hpath ? harness_load_checked(hpath) : NULL;
    tokenizer *tok = NULL;
    int bad = (hpath && !h) || ckpt_tokenizer(&k, init, tok_path, 0, &tok);
    enc.tok = tok;
    if (!bad && enc.tok && tok_vocab_size(enc.tok) > m->cfg.vocab_size) {
        hat_errat(tok_path ? tok_path : init, 0, "tokenizer has %d ids, the model only %d",
                  tok_vocab_size(enc.tok), m->cfg.vocab_size);
        bad = 1;
    }
    enc.harness = h;
    if (bad || train_data_load(&d, data, &enc, m->cfg.vocab_size, s.T, c.skip_bad)) {
        tok_free((tokenizer *)enc.tok);
        json_decref(h);
        train_device_close(&td);
        ckpt_free(&k);
        return EXIT_FAIL;
    }
    tok_free((tokenizer *)enc.tok);
    json_decref(h);
    if (d.n_truncated)
        hat_warn("%ld of %ld sequences longer than %d tokens were cut, losing %ld of %ld loss targets "
                 "(the longest has %ld tokens)", d.n_truncated, d.n, s.T + 1, d.n_targets_cut,
                 d.n_targets + d.n_targets_cut, d.longest);
    hat_warn("%ld sequences of %ld tokens in all, %ld of them trained (loss targets) per epoch",
             d.n, d.n_tokens, d.n_targets);

    sft_ctx x = { &k, &d, &td };
    train_loop L = { .step = sft_one, .ctx = &x, .steps = steps, .save_every = save_every,
                     .metrics = metrics, .output = c.output, .name = init, .dev = &td };
    int rc = train_run(&k, &s, &L);
    train_device_close(&td);
    train_data_free(&d);
    ckpt_free(&k);
    return rc ? EXIT_FAIL : EXIT_OK;
}
