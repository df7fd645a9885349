/* generate.h — the decoding engine: KV-cache inference with batched
 * prefill and continuous batching, plus sampling.
 *
 * Sequences join (gen_add) and leave (gen_remove) a running batch at any
 * step.  Each gen_step runs ONE forward pass over the rows of every active
 * sequence — all prompt tokens of a newly added one (prefill), one token
 * for the others — so matmuls are batched across sequences, then samples
 * one token per sequence from its own RNG stream.  A sequence's output is
 * therefore independent of which others share the batch.
 * Used by generate; rollout, grpo-step, opd-step and serve build on it. */
#ifndef HAT_GENERATE_H
#define HAT_GENERATE_H

#include "model.h"
#include "rng.h"

#include <stdint.h>

typedef struct {
    float temperature;   /* 0 = greedy (argmax, lowest id on ties) */
    int   top_k;         /* 0 = off */
    float top_p;         /* 1 = off */
    int   max_tokens;    /* new tokens at most */
    int   eos;           /* stop id, -1 = none */
    const int *stop_ids; /* extra stop ids */
    int   n_stop;
} gen_params;

enum { GEN_RUNNING, GEN_STOP, GEN_LENGTH };

typedef struct gen_engine gen_engine;

/* Up to max_seqs concurrent sequences of at most max_len tokens
 * (prompt + generated). */
gen_engine *gen_new(const model *m, int max_seqs, int max_len);
void        gen_free(gen_engine *e);
/* Start a sequence; returns its slot, or -1 if full or too long.
 * Sampling draws from rng_derive(seed, stream). */
int  gen_add(gen_engine *e, const int *prompt, int n, const gen_params *p,
             uint64_t seed, uint64_t stream);
/* One forward + sample for every running sequence; returns how many
 * are still running. */
int  gen_step(gen_engine *e);
int  gen_status(const gen_engine *e, int slot);       /* GEN_* */
/* Generated ids (and their log-probabilities under the sampling
 * distribution before temperature, i.e. the model's) so far. */
const int   *gen_output(const gen_engine *e, int slot, int *n);
const float *gen_logprobs(const gen_engine *e, int slot);
void gen_remove(gen_engine *e, int slot);

/* Logits of the last prompt position via the cache path (for tests):
 * out (V). */
void gen_prefill_logits(gen_engine *e, int slot, float *out);

/* Sampling from logits (V): returns the id; *logprob = log softmax. */
int  sample_logits(const float *logits, int V, const gen_params *p, rng_t *r,
                   float *logprob, float *scratch);

#endif
