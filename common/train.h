/* train.h — the supervised training loop shared by sft-step (and later
 * opd-step / grpo-step): pre-tokenised sequences in, optimiser steps out,
 * with every piece of state needed for an exact resume.
 *
 * Data: JSONL, one sequence per line, {"ids":[...], "mask":[0/1...]};
 * mask[i] = 1 means token i is a target of the loss (predicted from the
 * tokens before it); no mask = every token after the first counts.  With
 * a tokenizer, records without "ids" are encoded by record_encode
 * (chat_encode.h): {"text"} for plain language modelling, trajectories
 * {"messages", "harness"?} with the loss on what the assistant wrote.
 * Sequences longer than T+1 tokens are cut to T+1.
 *
 * Batching: with bucket set, the sequences of each run of 32 batches are
 * grouped by length, and each micro-batch is only as long as its longest
 * sequence (rounded up to 16), so short records do not pay for long ones;
 * the order of those batches is shuffled again.  Everything is a pure
 * function of (seed, data_pos).
 *
 * Order: epoch e visits the sequences in a permutation drawn from
 * rng_derive(seed, e); the global sequence counter data_pos alone says
 * where the next batch starts, so resuming needs only (step, data_pos)
 * plus the optimiser moments. */
#ifndef HAT_TRAIN_H
#define HAT_TRAIN_H

#include "ckpt.h"
#include "model.h"
#include "model_cuda.h"
#include "optim.h"
#include "rng.h"
#include "tokenizer.h"

#include <jansson.h>

typedef struct {
    int           *ids;
    unsigned char *mask;
    int            n;
} train_seq;

typedef struct {
    train_seq *seq;
    long       n;
    long       n_truncated;    /* sequences cut to T+1 tokens */
    long       n_tokens;       /* tokens kept (after the cut) */
    long       n_targets;      /* loss targets kept: what an epoch trains */
    long       n_targets_cut;  /* loss targets lost to the cut */
    long       longest;        /* tokens of the longest sequence before the cut */
} train_data;

/* How records without "ids" become sequences (NULL members: ids only). */
typedef struct {
    const tokenizer *tok;
    const json_t    *harness;    /* for trajectories without an inline one */
} train_encoder;

/* Read sequences; ids must be in [0, vocab).  enc may be NULL.  0 or -1
 * (reported).  Data whose every loss target lies beyond the cut (nothing
 * to train at this T) is an error naming the --seq that would keep them. */
int  train_data_load(train_data *d, const char *path, const train_encoder *enc, int vocab,
                     int T, int skip_bad);
void train_data_free(train_data *d);

typedef struct {
    optim_config opt;
    int          B, T, accum;   /* sequences per micro-batch, length, micro-batches per step */
    int          bucket;        /* group micro-batches by length (see above) */
    uint64_t     seed;
    long         step;          /* optimiser steps taken */
    long         data_pos;      /* sequences consumed */
    rng_t        rng;           /* reserved for stochastic training; saved verbatim */
} train_state;

json_t *train_state_json(const train_state *s);
int     train_state_parse(train_state *s, const json_t *j, const char *name);

/* Fill one micro-batch from the sequences at data_pos onwards and advance
 * data_pos by B.  Returns its length Tb <= T; tokens and targets (-1 = no
 * loss) are laid out (B, Tb) in buffers of B*T. */
int  train_fill_batch(const train_data *d, train_state *s, int *tokens, int *targets);

typedef struct {
    double loss;        /* mean over the step's targets (+ weighted MTP) */
    double grad_norm;   /* before clipping */
    float  lr;
    long   tokens;      /* targets in the step: the tokens trained */
    long   processed;   /* positions the forward pass ran (B x Tb per micro-batch,
                           padding included): the tokens computed */
} train_result;

/* One optimiser step: accum micro-batches, clip, AdamW. */
void train_step(model *m, float *exp_avg, float *exp_avg_sq, const train_data *d,
                train_state *s, train_result *r);

/* Where a trainer computes (--device, --precision).  On the CPU the
 * checkpoint's model and moments are trained in place (model.c).  On a
 * GPU the parameters and moments live on the device (model_cuda.h) and
 * the checkpoint's copies are refreshed by train_device_sync before
 * every save, so checkpoints have the same format either way and a run
 * may resume on the other device.
 * Data parallel (world size > 1 from the launcher, kernels/cuda/dist.h;
 * GPU only): every rank fills all `accum` micro-batches of a step (the
 * data order stays a function of (seed, data_pos) alone) but computes
 * only those with index % world == rank; the per-rank gradients, each
 * already scaled by 1/(targets of the whole step), are summed over the
 * ranks, which is the gradient of the step's mean loss: the same step
 * as one process taking all `accum` micro-batches.  Rank 0 alone writes
 * metrics and checkpoints. */
typedef struct {
    int         cuda;        /* 0 = CPU, 1 = this process's GPU */
    int         precision;   /* MC_FP32 | MC_BF16 (GPU only) */
    model_cuda *mc;          /* GPU copy of the model, or NULL */
    mc_dist    *dist;        /* ranks, when world > 1 */
    int         rank, world;
} train_device;

/* Resolve `device` (a hat_device, cuda/device.h) and set up on k (call
 * after train_begin: the moments go up with the parameters).  0, or -1
 * after a one-line message naming the reason (no GPU, a build without
 * CUDA, a data-parallel launch on the CPU or of a trainer without a
 * data-parallel mode, NCCL...).  accum > 0: the trainer shards its
 * micro-batches over ranks (sft-step; accum serves a warning when the
 * ranks would get unequal shares); accum = 0: it has no data-parallel
 * mode and a launch with several ranks is refused. */
int  train_device_open(train_device *td, ckpt *k, int device, int precision, int accum);
void train_device_close(train_device *td);
/* The device's parameters and moments into k (no-op on the CPU). */
void train_device_sync(train_device *td, ckpt *k);
const char *train_device_name(const train_device *td);   /* "cpu" | "cuda" */
/* train_step on td (NULL or CPU: train_step on k's buffers). */
void train_step_on(train_device *td, ckpt *k, const train_data *d, train_state *s,
                   train_result *r);

/* The other trainers on td (defined in opd.c and grpo.c, declared here
 * with the device layer): the policy / student trains on td->mc, the
 * frozen teacher / reference gets a forward-only copy in the same
 * precision, sampling stays on the CPU and sees the new weights after
 * every step (they are downloaded into the host model).  No-op on the
 * CPU.  0, or -1 after a message. */
struct opd;
struct grpo;
int  opd_use_device(struct opd *o, train_device *td);
int  grpo_use_device(struct grpo *g, train_device *td);

/* Start or continue a run on checkpoint k.  With resume: the trainer state
 * stored in k (and, when key is set, that stage's section, which the
 * caller parses) must be there, and s is read from it.  Otherwise s gets
 * seed, an RNG seeded from it, a schedule of `steps` steps unless
 * total_steps was set, and k zeroed optimiser moments.  0 or -1
 * (reported against name). */
int  train_begin(ckpt *k, train_state *s, int resume, const char *key, uint64_t seed, long steps,
                 const char *name);

/* Write checkpoint k to path with trainer_state.json from s, plus (when key
 * is not NULL) a stage's own settings under key (extra is stolen).  The
 * activations are freed first so the serialised copies fit in their
 * place; the next step allocates them again.  0 or -1 (reported). */
int  train_save(ckpt *k, const train_state *s, const char *key, json_t *extra, const char *path);

/* The loop every trainer runs: steps from s->step, each appending its
 * metrics line to the --metrics log and showing its status on a
 * terminal, a checkpoint every save_every steps and at the end. */
typedef struct {
    /* One step: advance s; 0 with *line (a new reference, or NULL) and a
     * one-line status, or -1 with *err (malloc'd). */
    int     (*step)(void *ctx, train_state *s, json_t **line, char *status, size_t n, char **err);
    json_t *(*config)(void *ctx);  /* the stage's settings saved under key (new), or NULL */
    const char *key;               /* trainer_state section, or NULL */
    void   *ctx;
    long    steps, save_every;
    const char *metrics;           /* log path, or NULL */
    const char *output;            /* checkpoint path */
    const char *name;              /* what step errors are reported against */
    train_device *dev;             /* NULL = CPU; else synced before each save, and
                                      ranks other than 0 write nothing */
} train_loop;
/* 0, or -1 (reported; the log keeps its lines, no checkpoint is written
 * after the failure). */
int  train_run(ckpt *k, train_state *s, const train_loop *L);

#endif
