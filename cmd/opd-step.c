/* opd-step — on-policy distillation of a student checkpoint towards a
 * frozen teacher on general instructions: N steps per invocation, exact
 * resume from the trainer state stored in the output checkpoint. */
#include "chat.h"
#include "ckpt.h"
#include "cli.h"
#include "cuda/device.h"
#include "generate.h"
#include "jsonl.h"
#include "opd.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: opd-step --init CKPT --teacher CKPT --steps N [options] -o OUT.ckpt [PROMPTS.jsonl...]\n"
    "On-policy distillation: the student samples --samples completions of each\n"
    "prompt (general-gen records; the first user message), the teacher scores every\n"
    "completion token, and the student follows the per-token reverse KL.\n"
    "  --init CKPT        student checkpoint (with tokenizer.json)\n"
    "  --teacher CKPT     frozen teacher (e.g. the base model); same tokenizer\n"
    "  --steps N          steps to take in this run (required)\n"
    "  --resume           continue the run stored in --init (options below ignored)\n"
    "  --prompts-per-step N  prompts per step (default 8)\n"
    "  --samples K        completions per prompt (default 4)\n"
    "  --temperature X    sampling temperature (default 1)\n"
    "  --top-k N  --top-p X\n"
    "  --max-tokens N     completion tokens at most (default 128)\n"
    "  --kl MODE          full (reverse KL over the vocabulary, default) |\n"
    "                     sampled (the sampled token's log-ratio as an advantage) |\n"
    "                     forward (KL(teacher || student) over the vocabulary)\n"
    "  --teacher-samples J  of each prompt's K completions, J are the teacher's\n"
    "                     samples, distilled on the same way (default 0)\n"
    "  --micro-batch N    sequences per forward pass (default 8)\n"
    "  --no-thinking      enable_thinking=false in the generation prompt\n"
    "  --replay FILE      also train on the domain's SFT data (sft-step's formats):\n"
    "                     each step adds W x its cross-entropy on B sequences\n"
    "  --replay-batch B   sequences per step (default 4)\n"
    "  --replay-weight W  weight of their loss (default 1)\n"
    "  --replay-seq T     tokens per sequence, longer ones cut (default 1024)\n"
    "optimiser (as sft-step): --lr X (1e-4) --min-lr X --warmup N --schedule S\n"
    "  (constant) --total-steps N --weight-decay X (0) --beta2 X --clip X (1)\n"
    "  --metrics FILE     append one JSON line per step\n"
    "  --save-every K     also write -o every K steps\n"
    "  --seed N           prompt order and sampling seed (default 1)\n"
    "  --device D         cpu | cuda | auto: where the student trains and the\n"
    "                     teacher scores (sampling stays on the CPU; default cpu)\n"
    "  --precision P      on cuda: bf16 (default) or fp32\n"
    "  --skip-bad         skip malformed prompt lines\n"
    "  -o FILE            output checkpoint (required)\n";

enum { O_INIT = 1, O_TEACHER, O_STEPS, O_RESUME, O_PPS, O_SAMPLES, O_TEMP, O_TOPK, O_TOPP,
       O_MAXTOK, O_KL, O_TEACHER_K, O_MB, O_NOTHINK,
       O_METRICS, O_SAVE, O_DEVICE, O_PRECISION, O_REPLAY, O_RBATCH, O_RWEIGHT, O_RSEQ };

/* A prompt needs its messages. */
static char *prompt_check(const json_t *v)
{
    return json_is_array(json_object_get(v, "messages")) ? NULL
           : xstrdup("need \"messages\": an array with a user message");
}

typedef struct { opd *o; ckpt *k; const opd_config *oc; train_device *dev; } opd_ctx;

/* One distillation step for train_run. */
static int opd_one(void *ctx, train_state *s, json_t **line, char *status, size_t n, char **err)
{
    opd_ctx *x = ctx;
    opd_metrics M;
    if (opd_step(x->o, s, x->k->opt_m, x->k->opt_v, &M, err)) return -1;
    *line = opd_metrics_json(&M, s->step);
    json_object_set_new(*line, "device", json_string(train_device_name(x->dev)));
    double loss = x->oc->kl == OPD_KL_FULL ? M.kl : x->oc->kl == OPD_KL_FORWARD ? M.kl_forward : M.kl_sampled;
    snprintf(status, n, "kl %.4f  len %.1f  gen %.1fs opt %.1fs", loss, M.completion_len, M.t_gen, M.t_opt);
    if (M.replay_loss >= 0) {
        size_t u = strlen(status);
        snprintf(status + u, n - u, "  replay %.4f", M.replay_loss);
    }
    return 0;
}

static json_t *opd_settings(void *ctx) { return opd_config_json(((opd_ctx *)ctx)->oc); }

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        { "init", required_argument, NULL, O_INIT }, { "teacher", required_argument, NULL, O_TEACHER },
        { "steps", required_argument, NULL, O_STEPS }, { "resume", no_argument, NULL, O_RESUME },
        { "prompts-per-step", required_argument, NULL, O_PPS }, { "samples", required_argument, NULL, O_SAMPLES },
        { "temperature", required_argument, NULL, O_TEMP }, { "top-k", required_argument, NULL, O_TOPK },
        { "top-p", required_argument, NULL, O_TOPP }, { "max-tokens", required_argument, NULL, O_MAXTOK },
        { "kl", required_argument, NULL, O_KL },
        { "teacher-samples", required_argument, NULL, O_TEACHER_K }, { "micro-batch", required_argument, NULL, O_MB },
        { "no-thinking", no_argument, NULL, O_NOTHINK },
        { "replay", required_argument, NULL, O_REPLAY }, { "replay-batch", required_argument, NULL, O_RBATCH },
        { "replay-weight", required_argument, NULL, O_RWEIGHT }, { "replay-seq", required_argument, NULL, O_RSEQ },
        { "metrics", required_argument, NULL, O_METRICS },
        { "save-every", required_argument, NULL, O_SAVE },
        { "device", required_argument, NULL, O_DEVICE }, { "precision", required_argument, NULL, O_PRECISION },
        OPTIM_LONG_OPTIONS,
        { 0 } };
    cli_spec spec = { usage, "", longs };
    cli_common c = { 0 };
    const char *init = NULL, *teacher = NULL, *metrics = NULL, *replay = NULL;
    int replay_batch = 4;
    long steps = -1, save_every = 0;
    int resume = 0, opt, precision = MC_BF16;
    hat_device device = HAT_DEVICE_CPU;
    opd_config oc;
    opd_config_default(&oc);
    train_state s = { 0 };
    optim_defaults(&s.opt);
    s.opt.lr = 1e-4f;
    s.opt.weight_decay = 0;
    s.opt.schedule = SCHED_CONSTANT;
    s.B = 1; s.T = 1; s.accum = 1;
    cli_init(argc, argv);
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        if (optim_cli(&spec, opt, optarg, &s.opt)) continue;
        switch (opt) {
        case O_INIT: init = optarg; break;
        case O_TEACHER: teacher = optarg; break;
        case O_STEPS: steps = cli_long(&spec, "--steps", optarg, 0, 1L << 40); break;
        case O_RESUME: resume = 1; break;
        case O_PPS: oc.n_prompts = (int)cli_long(&spec, "--prompts-per-step", optarg, 1, 1 << 16); break;
        case O_SAMPLES: oc.K = (int)cli_long(&spec, "--samples", optarg, 1, 1 << 12); break;
        case O_TEMP: oc.temperature = (float)cli_double(&spec, "--temperature", optarg, 0, 100); break;
        case O_TOPK: oc.top_k = (int)cli_long(&spec, "--top-k", optarg, 0, 1 << 24); break;
        case O_TOPP: oc.top_p = (float)cli_double(&spec, "--top-p", optarg, 0, 1); break;
        case O_MAXTOK: oc.max_tokens = (int)cli_long(&spec, "--max-tokens", optarg, 1, 1 << 20); break;
        case O_KL:
            if ((oc.kl = opd_kl_mode(optarg)) < 0)
                cli_usage_error(&spec, "--kl: must be full, sampled or forward");
            break;
        case O_TEACHER_K: oc.teacher_K = (int)cli_long(&spec, "--teacher-samples", optarg, 0, 1 << 12); break;
        case O_MB: oc.micro_batch = (int)cli_long(&spec, "--micro-batch", optarg, 1, 1 << 16); break;
        case O_NOTHINK: oc.enable_thinking = CHAT_THINK_OFF; break;
        case O_REPLAY: replay = optarg; break;
        case O_RBATCH: replay_batch = (int)cli_long(&spec, "--replay-batch", optarg, 1, 1 << 16); break;
        case O_RWEIGHT: oc.replay_weight = (float)cli_double(&spec, "--replay-weight", optarg, 0, 1e6); break;
        case O_RSEQ: oc.replay_seq = (int)cli_long(&spec, "--replay-seq", optarg, 2, 1 << 20); break;
        case O_METRICS: metrics = optarg; break;
        case O_DEVICE: device = gen_device_arg(&spec, optarg); break;
        case O_PRECISION: precision = gen_precision_arg(&spec, optarg); break;
        case O_SAVE: save_every = cli_long(&spec, "--save-every", optarg, 1, 1L << 40); break;
        }
    }
    if (!init || !teacher || steps < 0) cli_usage_error(&spec, "--init, --teacher and --steps are required");
    if (!c.output || is_stdio_path(c.output)) cli_usage_error(&spec, "-o OUT.ckpt is required");
    if (oc.teacher_K > oc.K) cli_usage_error(&spec, "--teacher-samples: at most --samples");
    if (replay) oc.replay_batch = replay_batch;

    int rc = 0, have_t = 0;
    ckpt k = { 0 }, kt = { 0 };
    train_device td = { 0 };
    tokenizer *tok = NULL;
    json_t *prompts = NULL;
    train_data rd = { 0 };
    opd *o = NULL;
    char *err = NULL;
    if (ckpt_load(&k, init)) return EXIT_FAIL;
    model *m = k.m;
    if (train_begin(&k, &s, resume, "opd", c.seed, steps, init) ||
        (resume && opd_config_parse(&oc, json_object_get(k.state, "opd"), init))) { rc = -1; goto out; }
    if (train_device_open(&td, &k, device, precision, 0)) { rc = -1; goto out; }
    if (ckpt_load(&kt, teacher)) { rc = -1; goto out; }
    have_t = 1;
    if ((err = opd_check_tokenizers(k.tokenizer, k.tokenizer_len, kt.tokenizer, kt.tokenizer_len, m, kt.m))) {
        hat_errat(teacher, 0, "%s", err);
        rc = -1;
        goto out;
    }
    if (ckpt_tokenizer(&k, init, NULL, 1, &tok)) { rc = -1; goto out; }
    if (!(prompts = jsonl_load_all(argv + optind, argc - optind, c.skip_bad, prompt_check, "prompts"))) { rc = -1; goto out; }
    if (!(o = opd_new(&oc, m, kt.m, tok, prompts, &err))) {
        hat_errat(optind < argc ? argv[optind] : "-", 0, "%s", err);
        rc = -1;
        goto out;
    }
    if (opd_use_device(o, &td)) { rc = -1; goto out; }
    if (oc.replay_batch && !replay) {   /* a resumed run replays what it began with */
        hat_errat(init, 0, "this run replays domain data: give --replay FILE again to resume it");
        rc = -1;
        goto out;
    }
    if (replay) {
        if (oc.replay_seq > m->cfg.max_position_embeddings) {
            hat_errat(replay, 0, "--replay-seq %d exceeds max_position_embeddings %d", oc.replay_seq,
                      m->cfg.max_position_embeddings);
            rc = -1;
            goto out;
        }
        train_encoder enc = { tok, NULL };
        if (train_data_load(&rd, replay, &enc, m->cfg.vocab_size, oc.replay_seq, c.skip_bad) ||
            opd_set_replay(o, &rd, &err)) {
            if (err) hat_errat(replay, 0, "%s", err);
            rc = -1;
            goto out;
        }
    }
    opd_ctx x = { o, &k, &oc, &td };
    train_loop L = { .step = opd_one, .config = opd_settings, .key = "opd", .ctx = &x, .steps = steps,
                     .save_every = save_every, .metrics = metrics, .output = c.output, .name = init,
                     .dev = &td };
    rc = train_run(&k, &s, &L);
out:
    opd_free(o);
    train_data_free(&rd);
    train_device_close(&td);
    json_decref(prompts);
    tok_free(tok);
    free(err);
    if (have_t) ckpt_free(&kt);
    ckpt_free(&k);
    return rc ? EXIT_FAIL : EXIT_OK;
}
