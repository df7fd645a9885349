/* train.h — the supervised training loop shared by sft-step (and later
 * opd-step / grpo-step): pre-tokenised sequences in, optimiser steps out,
 * with every piece of state needed for an exact resume.
 *
 * Data: JSONL, one sequence per line, {"ids":[...], "mask":[0/1...]};
 * mask[i] = 1 means token i is a target of the loss (predicted from the
 * tokens before it); no mask = every token after the first counts.
 * Sequences longer than T+1 tokens are cut to T+1.
 *
 * Order: epoch e visits the sequences in a permutation drawn from
 * rng_derive(seed, e); the global sequence counter data_pos alone says
 * where the next batch starts, so resuming needs only (step, data_pos)
 * plus the optimiser moments. */
#ifndef HAT_TRAIN_H
#define HAT_TRAIN_H

#include "model.h"
#include "optim.h"
#include "rng.h"

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
} train_data;

/* Read sequences; ids must be in [0, vocab).  0 or -1 (reported). */
int  train_data_load(train_data *d, const char *path, int vocab, int T, int skip_bad);
void train_data_free(train_data *d);

typedef struct {
    optim_config opt;
    int          B, T, accum;   /* sequences per micro-batch, length, micro-batches per step */
    uint64_t     seed;
    long         step;          /* optimiser steps taken */
    long         data_pos;      /* sequences consumed */
    rng_t        rng;           /* reserved for stochastic training; saved verbatim */
} train_state;

json_t *train_state_json(const train_state *s);
int     train_state_parse(train_state *s, const json_t *j, const char *name);

/* Fill one micro-batch (B*T tokens and targets, -1 = no loss) from the
 * sequences at data_pos onwards and advance data_pos by B. */
void train_fill_batch(const train_data *d, train_state *s, int *tokens, int *targets);

typedef struct {
    double loss;        /* mean over the step's targets (+ weighted MTP) */
    double grad_norm;   /* before clipping */
    float  lr;
    long   tokens;      /* targets in the step */
} train_result;

/* One optimiser step: accum micro-batches, clip, AdamW. */
void train_step(model *m, float *exp_avg, float *exp_avg_sq, const train_data *d,
                train_state *s, train_result *r);

#endif
