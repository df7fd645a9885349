/* grpo-step — GRPO of a checkpoint as the agent in the simulator, HSA on
 * every rollout group (HSA-RL): N steps per invocation, exact resume from
 * the trainer state stored in the output checkpoint. */
#include "ckpt.h"
#include "cli.h"
#include "cuda/device.h"
#include "generate.h"
#include "grpo.h"
#include "harness.h"
#include "harness_compile.h"
#include "jsonl.h"
#include "tasks.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: grpo-step --init CKPT --world FILE --harness H --steps N [options] -o OUT.ckpt\n"
    "                 [TASKS.jsonl...]\n"
    "GRPO in the simulator: per step, --groups tasks, each played --group-size times\n"
    "under one harness (the original or an HSA variant), scored by the judge, with\n"
    "group-relative advantages and a clipped importance-ratio objective.\n"
    "  --init CKPT         policy checkpoint (with tokenizer.json) to start from\n"
    "  --tokenizer FILE    tokenizer.json instead of the checkpoint's\n"
    "  --ref CKPT          frozen reference for the KL term (needed when --beta > 0)\n"
    "  --world FILE        world.json (required)\n"
    "  --harness H         the original harness (required)\n"
    "  --steps N           steps to take in this run (required)\n"
    "  --resume            continue the run stored in --init (options below ignored)\n"
    "groups and HSA:\n"
    "  --groups N          groups (tasks) per step (default 4)\n"
    "  --group-size G      rollouts per group (default 8)\n"
    "  --hsa-mix R         fraction of groups under the original harness (default 0.5)\n"
    "  --no-hsa            every group under the original harness\n"
    "  --vocab NAME        HSA vocabulary: train (default), heldout or a directory\n"
    "  --p-skill-id P  --p-skill-content P  --p-tools P  --p-prompt P  --p-hooks P\n"
    "                      per-operation probability of each dimension (default 0.5)\n"
    "  --dims LIST         only these dimensions, at --p (as hsa-augment)\n"
    "  --p P               probability used by --dims (default 0.5)\n"
    "generation:\n"
    "  --temperature X     sampling temperature (default 1)\n"
    "  --top-k N  --top-p X\n"
    "  --max-tokens N      generated tokens per turn (default 64)\n"
    "  --max-turns N       assistant turns per conversation (default 4)\n"
    "  --max-gen-tokens N  generated tokens per conversation (default no limit)\n"
    "  --max-context N     tokens per conversation (default the model's maximum)\n"
    "  --rollout-batch N   conversations in flight (default groups * group-size)\n"
    "  --no-thinking       enable_thinking=false in the generation prompt\n"
    "reward and advantages:\n"
    "  --judge-config FILE judge config (default data/judge/default.json)\n"
    "  --weights A,E,T,S,C weights of accuracy, effectiveness, tool rationality,\n"
    "                      skill selection and the CoT penalty (default: the judge's)\n"
    "  --no-std-scale      advantages = reward - group mean, not divided by the std\n"
    "  --gdpo              normalise each component in its group, then sum\n"
    "  --split-segments    tool-call turns and reply turns as separate groups\n"
    "loss:\n"
    "  --loss-type T       grpo | bnpo | dr_grpo | dapo (default dapo)\n"
    "  --importance L      token | sequence (GSPO) (default token)\n"
    "  --epsilon X         lower clip range (default 0.2)\n"
    "  --epsilon-high X    upper clip range (default: --epsilon)\n"
    "  --beta X            k3 KL weight to --ref, 0 = none (default 0)\n"
    "  --epochs N          optimisation passes per batch (default 1)\n"
    "  --micro-batch N     conversations per forward pass (default 4)\n"
    "optimiser (as sft-step): --lr X (1e-5) --min-lr X --warmup N --schedule S\n"
    "  (constant) --total-steps N --weight-decay X (0) --beta2 X --clip X (1)\n"
    "  --metrics FILE      append one JSON line per step\n"
    "  --save-every K      also write -o every K steps\n"
    "  --seed N            seed of task order, HSA and sampling (default 1)\n"
    "  --device D          cpu | cuda | auto: where the policy trains and the\n"
    "                      reference scores (rollouts stay on the CPU; default cpu)\n"
    "  --precision P       on cuda: bf16 (default) or fp32\n"
    "  --skip-bad          skip bad task lines\n"
    "  -o FILE             output checkpoint (required)\n";

enum { O_INIT = 1, O_TOK, O_REF, O_WORLD, O_HARNESS, O_STEPS, O_RESUME, O_GROUPS, O_GSIZE,
       O_MIX, O_NOHSA, O_VOCAB, O_PSID, O_PSC, O_PTOOLS, O_PPROMPT, O_PHOOKS, O_DIMS, O_P,
       O_TEMP, O_TOPK, O_TOPP, O_MAXTOK, O_TURNS, O_GENTOK, O_CTX, O_RBATCH, O_NOTHINK,
       O_JCFG, O_WEIGHTS, O_NOSTD, O_GDPO, O_SPLIT, O_LOSS, O_IMP, O_EPS, O_EPSH, O_BETA,
       O_EPOCHS, O_MB,
       O_METRICS, O_SAVE, O_DEVICE, O_PRECISION };


static int parse_weights(const char *s, double *w)
{
    char *end;
    for (int k = 0; k < JUDGE_NCOMP; k++) {
        w[k] = strtod(s, &end);
        if (end == s || w[k] < 0 || (k < JUDGE_NCOMP - 1 ? *end != ',' : *end != 0)) return -1;
        s = end + 1;
    }
    return 0;
}

typedef struct { grpo *g; ckpt *k; const grpo_config *gc; train_device *dev; } grpo_ctx;

/* One GRPO step for train_run. */
static int grpo_one(void *ctx, train_state *s, json_t **line, char *status, size_t n, char **err)
{
    grpo_ctx *x = ctx;
    grpo_metrics M;
    if (grpo_step(x->g, s, x->k->opt_m, x->k->opt_v, &M, err)) return -1;
    *line = grpo_metrics_json(&M, s->step);
    json_t *t = json_incref(json_object_get(*line, "time"));   /* "time" stays last */
    json_object_del(*line, "time");
    json_object_set_new(*line, "device", json_string(train_device_name(x->dev)));
    json_object_set_new(*line, "time", t);
    snprintf(status, n, "reward %.3f  kl %.4f  clip %.3f  gen %.1fs score %.1fs opt %.1fs", M.reward_mean,
             M.kl, M.clip_frac, M.t_gen, M.t_score, M.t_opt);
    return 0;
}

static json_t *grpo_settings(void *ctx) { return grpo_config_json(((grpo_ctx *)ctx)->gc); }

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        { "init", required_argument, NULL, O_INIT }, { "tokenizer", required_argument, NULL, O_TOK },
        { "ref", required_argument, NULL, O_REF }, { "world", required_argument, NULL, O_WORLD },
        { "harness", required_argument, NULL, O_HARNESS }, { "steps", required_argument, NULL, O_STEPS },
        { "resume", no_argument, NULL, O_RESUME }, { "groups", required_argument, NULL, O_GROUPS },
        { "group-size", required_argument, NULL, O_GSIZE }, { "hsa-mix", required_argument, NULL, O_MIX },
        { "no-hsa", no_argument, NULL, O_NOHSA }, { "vocab", required_argument, NULL, O_VOCAB },
        { "p-skill-id", required_argument, NULL, O_PSID }, { "p-skill-content", required_argument, NULL, O_PSC },
        { "p-tools", required_argument, NULL, O_PTOOLS }, { "p-prompt", required_argument, NULL, O_PPROMPT },
        { "p-hooks", required_argument, NULL, O_PHOOKS }, { "dims", required_argument, NULL, O_DIMS },
        { "p", required_argument, NULL, O_P }, { "temperature", required_argument, NULL, O_TEMP },
        { "top-k", required_argument, NULL, O_TOPK }, { "top-p", required_argument, NULL, O_TOPP },
        { "max-tokens", required_argument, NULL, O_MAXTOK }, { "max-turns", required_argument, NULL, O_TURNS },
        { "max-gen-tokens", required_argument, NULL, O_GENTOK }, { "max-context", required_argument, NULL, O_CTX },
        { "rollout-batch", required_argument, NULL, O_RBATCH }, { "no-thinking", no_argument, NULL, O_NOTHINK },
        { "judge-config", required_argument, NULL, O_JCFG }, { "weights", required_argument, NULL, O_WEIGHTS },
        { "no-std-scale", no_argument, NULL, O_NOSTD }, { "gdpo", no_argument, NULL, O_GDPO },
        { "split-segments", no_argument, NULL, O_SPLIT }, { "loss-type", required_argument, NULL, O_LOSS },
        { "importance", required_argument, NULL, O_IMP }, { "epsilon", required_argument, NULL, O_EPS },
        { "epsilon-high", required_argument, NULL, O_EPSH }, { "beta", required_argument, NULL, O_BETA },
        { "epochs", required_argument, NULL, O_EPOCHS }, { "micro-batch", required_argument, NULL, O_MB },
        { "metrics", required_argument, NULL, O_METRICS }, { "save-every", required_argument, NULL, O_SAVE },
        { "device", required_argument, NULL, O_DEVICE }, { "precision", required_argument, NULL, O_PRECISION },
        OPTIM_LONG_OPTIONS,
        { 0 } };
    cli_spec spec = { usage, "", longs };
    cli_common c = { 0 };
    const char *init = NULL, *tpath = NULL, *refp = NULL, *wpath = NULL, *hpath = NULL;
    const char *vocab_name = "train", *dims = NULL, *jcfg = NULL, *metrics = NULL;
    long steps = -1, save_every = 0;
    int resume = 0, weights_set = 0, epsh_set = 0, opt, precision = MC_BF16;
    hat_device device = HAT_DEVICE_CPU;
    double pdims = 0.5;
    grpo_config gc;
    grpo_config_default(&gc);
    gc.hsa.mix = 0.5;
    train_state s = { 0 };
    optim_defaults(&s.opt);
    s.opt.lr = 1e-5f;
    s.opt.weight_decay = 0;
    s.opt.schedule = SCHED_CONSTANT;
    s.B = 1; s.T = 1; s.accum = 1;
    cli_init(argc, argv);
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        if (optim_cli(&spec, opt, optarg, &s.opt)) continue;
        switch (opt) {
        case O_INIT: init = optarg; break;
        case O_TOK: tpath = optarg; break;
        case O_REF: refp = optarg; break;
        case O_WORLD: wpath = optarg; break;
        case O_HARNESS: hpath = optarg; break;
        case O_STEPS: steps = cli_long(&spec, "--steps", optarg, 0, 1L << 40); break;
        case O_RESUME: resume = 1; break;
        case O_GROUPS: gc.n_groups = (int)cli_long(&spec, "--groups", optarg, 1, 1 << 16); break;
        case O_GSIZE: gc.G = (int)cli_long(&spec, "--group-size", optarg, 1, 1 << 12); break;
        case O_MIX: gc.hsa.mix = cli_double(&spec, "--hsa-mix", optarg, 0, 1); break;
        case O_NOHSA: gc.hsa_on = 0; break;
        case O_VOCAB: vocab_name = optarg; break;
        case O_PSID: gc.hsa.p[HSA_SKILL_ID] = cli_double(&spec, "--p-skill-id", optarg, 0, 1); break;
        case O_PSC: gc.hsa.p[HSA_SKILL_CONTENT] = cli_double(&spec, "--p-skill-content", optarg, 0, 1); break;
        case O_PTOOLS: gc.hsa.p[HSA_TOOLS] = cli_double(&spec, "--p-tools", optarg, 0, 1); break;
        case O_PPROMPT: gc.hsa.p[HSA_PROMPT] = cli_double(&spec, "--p-prompt", optarg, 0, 1); break;
        case O_PHOOKS: gc.hsa.p[HSA_HOOKS] = cli_double(&spec, "--p-hooks", optarg, 0, 1); break;
        case O_DIMS: dims = optarg; break;
        case O_P: pdims = cli_double(&spec, "--p", optarg, 0, 1); break;
        case O_TEMP: gc.rp.temperature = (float)cli_double(&spec, "--temperature", optarg, 0, 100); break;
        case O_TOPK: gc.rp.top_k = (int)cli_long(&spec, "--top-k", optarg, 0, 1 << 24); break;
        case O_TOPP: gc.rp.top_p = (float)cli_double(&spec, "--top-p", optarg, 0, 1); break;
        case O_MAXTOK: gc.rp.max_tokens = (int)cli_long(&spec, "--max-tokens", optarg, 1, 1 << 20); break;
        case O_TURNS: gc.rp.max_turns = (int)cli_long(&spec, "--max-turns", optarg, 1, ROLLOUT_MAX_TURNS); break;
        case O_GENTOK: gc.rp.max_gen_tokens = (int)cli_long(&spec, "--max-gen-tokens", optarg, 1, 1 << 30); break;
        case O_CTX: gc.max_context = (int)cli_long(&spec, "--max-context", optarg, 16, 1 << 24); break;
        case O_RBATCH: gc.rollout_batch = (int)cli_long(&spec, "--rollout-batch", optarg, 1, 1 << 16); break;
        case O_NOTHINK: gc.rp.enable_thinking = CHAT_THINK_OFF; break;
        case O_JCFG: jcfg = optarg; break;
        case O_WEIGHTS:
            if (parse_weights(optarg, gc.w)) cli_usage_error(&spec, "--weights: five non-negative numbers A,E,T,S,C");
            weights_set = 1;
            break;
        case O_NOSTD: gc.std_scale = 0; break;
        case O_GDPO: gc.gdpo = 1; break;
        case O_SPLIT: gc.split = 1; break;
        case O_LOSS:
            if ((gc.loss_type = grpo_loss_parse(optarg)) < 0)
                cli_usage_error(&spec, "--loss-type: must be grpo, bnpo, dr_grpo or dapo");
            break;
        case O_IMP:
            if (strcmp(optarg, "token") && strcmp(optarg, "sequence"))
                cli_usage_error(&spec, "--importance: must be token or sequence");
            gc.lc.seq_level = !strcmp(optarg, "sequence");
            break;
        case O_EPS: gc.lc.eps_low = (float)cli_double(&spec, "--epsilon", optarg, 0, 1); break;
        case O_EPSH: gc.lc.eps_high = (float)cli_double(&spec, "--epsilon-high", optarg, 0, 100); epsh_set = 1; break;
        case O_BETA: gc.lc.beta = (float)cli_double(&spec, "--beta", optarg, 0, 1e3); break;
        case O_EPOCHS: gc.epochs = (int)cli_long(&spec, "--epochs", optarg, 1, 1000); break;
        case O_MB: gc.micro_batch = (int)cli_long(&spec, "--micro-batch", optarg, 1, 1 << 16); break;
        case O_METRICS: metrics = optarg; break;
        case O_DEVICE: device = gen_device_arg(&spec, optarg); break;
        case O_PRECISION: precision = gen_precision_arg(&spec, optarg); break;
        case O_SAVE: save_every = cli_long(&spec, "--save-every", optarg, 1, 1L << 40); break;
        }
    }
    if (!init || !wpath || !hpath || steps < 0)
        cli_usage_error(&spec, "--init, --world, --harness and --steps are required");
    if (!c.output || is_stdio_path(c.output)) cli_usage_error(&spec, "-o OUT.ckpt is required");
    if (!epsh_set) gc.lc.eps_high = gc.lc.eps_low;
    if (dims) {
        const char *bad = NULL;
        if (hsa_opts_dims(&gc.hsa, dims, pdims, &bad) < 0) cli_usage_error(&spec, "--dims: unknown dimension '%s'", bad);
    }

    int rc = 0;
    ckpt k = { 0 }, kr = { 0 };
    int have_ref = 0;
    train_device td = { 0 };
    tokenizer *t = NULL;
    world *w = NULL;
    json_t *h0 = NULL, *tasks = NULL, *jconf = NULL;
    judge *jd = NULL;
    hsa_vocab *vocab = NULL;
    grpo *g = NULL;
    char *err = NULL;
    if (ckpt_load(&k, init)) return EXIT_FAIL;
    model *m = k.m;
    if (train_begin(&k, &s, resume, "grpo", c.seed, steps, init) ||
        (resume && grpo_config_parse(&gc, json_object_get(k.state, "grpo"), init))) { rc = -1; goto out; }
    if (resume) weights_set = 1;
    if (train_device_open(&td, &k, device, precision, 0)) { rc = -1; goto out; }
    if (gc.lc.beta != 0 && !refp) { hat_errat(init, 0, "--beta > 0 needs --ref CKPT"); rc = -1; goto out; }
    if (gc.lc.beta != 0) {
        if (ckpt_load(&kr, refp)) { rc = -1; goto out; }
        have_ref = 1;
    }
    if (ckpt_tokenizer(&k, init, tpath, 1, &t)) { rc = -1; goto out; }
    if (!(w = world_load(wpath))) { rc = -1; goto out; }
    if (!(h0 = harness_load_checked(hpath))) { rc = -1; goto out; }
    if (!(tasks = jsonl_load_all(argv + optind, argc - optind, c.skip_bad, task_check, "tasks"))) { rc = -1; goto out; }
    if (jcfg && !(jconf = json_load_path(jcfg))) { rc = -1; goto out; }
    if (!(jd = judge_new(w, jconf, &err))) { hat_errat(jcfg ? jcfg : "judge", 0, "%s", err); rc = -1; goto out; }
    if (!weights_set) {
        json_t *jw = json_object_get(judge_config(jd), "weights");
        for (int i = 0; i < JUDGE_NCOMP; i++) {
            json_t *v = json_object_get(jw, judge_comp_names[i]);
            if (json_is_number(v)) gc.w[i] = json_number_value(v);
        }
    }
    if (gc.hsa_on && !(vocab = hsa_vocab_load(vocab_name))) { rc = -1; goto out; }
    if (!(g = grpo_new(&gc, m, have_ref ? kr.m : NULL, t, w, jd, tasks, h0, vocab, &err))) {
        hat_errat(init, 0, "%s", err);
        rc = -1;
        goto out;
    }
    if (grpo_use_device(g, &td)) { rc = -1; goto out; }
    grpo_ctx x = { g, &k, &gc, &td };
    train_loop L = { .step = grpo_one, .config = grpo_settings, .key = "grpo", .ctx = &x, .steps = steps,
                     .save_every = save_every, .metrics = metrics, .output = c.output, .name = init,
                     .dev = &td };
    rc = train_run(&k, &s, &L);
out:
    grpo_free(g);
    train_device_close(&td);
    hsa_vocab_free(vocab);
    judge_free(jd);
    json_decref(jconf);
    json_decref(tasks);
    json_decref(h0);
    world_free(w);
    tok_free(t);
    free(err);
    if (have_ref) ckpt_free(&kr);
    ckpt_free(&k);
    return rc ? EXIT_FAIL : EXIT_OK;
}
