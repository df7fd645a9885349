/* generate.h — the decoding engine: KV-cache inference with batched
 * prefill and continuous batching, speculative decoding with the model's
 * MTP module, plus sampling.
 *
 * Sequences join (gen_add) and leave (gen_remove) a running batch at any
 * step.  Each gen_step runs ONE forward pass over the rows of every active
 * sequence — all queued tokens of a new or extended one (prefill), one
 * token (or one token and its drafts) for the others — so matmuls are
 * batched across sequences, then samples per sequence from its own RNG
 * stream.
 *
 * BATCH INVARIANCE.  The engine's kernels (kernels/cpu/decode.c) compute
 * every row with a fixed instruction sequence whatever the number of rows
 * and threads, so a sequence's ids AND log-prob bits do not depend on what
 * else shares the batch, on --batch, on the thread count, or on whether a
 * prompt was prefilled in one pass, resumed from a kept cache or copied
 * from another sequence's cache.  (They may differ in the last bits from
 * model_forward, which runs on sgemm.)
 *
 * MULTI-TURN.  gen_extend keeps a finished sequence's cache and resumes it
 * with more tokens (an agent's tool results and next header): only the
 * new tokens are computed.  gen_add reuses the longest cached prefix of
 * any slot, live or removed (a shared system prompt), by copying its K/V
 * rows (gen_set_prefix_reuse turns it off); gen_add_shared does better
 * for a prefix many sequences start with: one copy, read by all.
 *
 * SPECULATIVE DECODING (gen_params.mtp_k = K > 0, models with an MTP
 * module).  After each step the MTP module drafts up to K tokens: the
 * first from the main model's final hidden state at the last cached
 * position and the embedding of the token just sampled; draft k+1 chains
 * on the MTP block's own output hidden state and draft k, as DeepSeek-V3
 * does at inference (the MTP block keeps its own KV cache; chained
 * entries are provisional and recomputed from the main model's states
 * once verified).  The next step verifies the last token and all drafts
 * in one forward over the cache and keeps the longest accepted prefix
 * plus one token from the main model; K/V rows of rejected drafts are
 * dropped (the cache length rolls back).  Greedy: a draft is accepted iff
 * it is the main model's argmax — the output (ids and log-probs) is
 * bit-identical to mtp_k = 0.  Sampling: accepted with probability
 * min(1, p/q), else the token is drawn from norm(max(0, p - q)) (p, q: the
 * main and draft distributions after temperature/top-k/top-p), so the
 * output is distributed exactly as the main model's, though the draws
 * differ from mtp_k = 0 for the same seed.  A sequence drafts only while
 * its MTP cache covers its whole context: one added or extended with
 * mtp_k = 0 keeps no MTP cache and does not draft after a later extend.
 *
 * THREADS.  Ops below ~256k multiply-adds run on the calling thread
 * without a parallel region.  libgomp's idle threads spin
 * (OMP_WAIT_POLICY=active is its default for a while after each region):
 * on a machine whose cores are shared, OMP_WAIT_POLICY=passive keeps a
 * spinning thread from taking a core from a working one.
 *
 * Used by generate; rollout, grpo-step, opd-step and serve build on it. */
#ifndef HAT_GENERATE_H
#define HAT_GENERATE_H

#include "cli.h"
#include "cuda/device.h"
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
    int   mtp_k;         /* speculative drafts per step with the MTP module
                            (0 = off; at most GEN_MTP_MAX; ignored without MTP) */
} gen_params;

#define GEN_MTP_MAX 8

enum { GEN_RUNNING, GEN_STOP, GEN_LENGTH };

typedef struct gen_engine gen_engine;

/* Up to max_seqs concurrent sequences of at most max_len tokens
 * (prompt + generated). */
gen_engine *gen_new(const model *m, int max_seqs, int max_len);
/* The same engine computing on the GPU (common/generate_cuda.h): weights
 * and KV caches on the device in bf16 (GEN_CUDA_BF16, the fast mode) or
 * fp32 (GEN_CUDA_FP32: greedy output matches the CPU engine's), sampling
 * on the device from the same draws of each sequence's stream.  Every
 * other function below works on it unchanged, except that MTP drafting
 * is off (mtp_k is ignored) and batch invariance holds only among steps
 * of the same kind (see generate_cuda.h).  NULL with *why set when this
 * build has no CUDA back end, no GPU is usable, or the model's shape is
 * not supported. */
enum { GEN_CUDA_FP32 = 0, GEN_CUDA_BF16 = 1 };   /* the values of MC_FP32, MC_BF16
                                                     (model_cuda.h): one --precision parse */
gen_engine *gen_new_cuda(const model *m, int max_seqs, int max_len, int precision,
                         const char **why);
/* 1 when e computes on the GPU. */
int         gen_on_gpu(const gen_engine *e);

/* ---- choosing the device (--device, --precision) ----------------------
 * One set of rules for every program that decodes (generate, rollout,
 * serve):
 *   cpu   the CPU engine (the default);
 *   cuda  the GPU engine, or an error naming the reason (no GPU or driver,
 *         a build without the CUDA back end, a model shape the GPU engine
 *         does not take); with MTP drafting asked for, a usage error: the
 *         GPU engine does not draft;
 *   auto  the GPU engine when a GPU is usable, no MTP drafting is asked
 *         for and the model fits it; else the CPU engine.  Never fails. */
typedef struct {
    hat_device device;      /* as asked: HAT_DEVICE_CPU, _CUDA or _AUTO */
    int        precision;   /* GPU weights and KV cache: GEN_CUDA_BF16 | GEN_CUDA_FP32 */
    int        mtp;         /* the caller will draft with MTP (gen_params.mtp_k > 0) */
} gen_device;
#define GEN_DEVICE_INIT { HAT_DEVICE_CPU, GEN_CUDA_BF16, 0 }

/* Option values, parsed alike by every program that computes (the
 * decoders and the trainers): a bad value is a usage error (exit 2,
 * "--device: must be cpu, cuda or auto (not "X")").  The precision is an
 * MC_* / GEN_CUDA_* value (the same numbers). */
hat_device  gen_device_arg(const cli_spec *spec, const char *arg);
int         gen_precision_arg(const cli_spec *spec, const char *arg);
/* Before loading anything, so a missing GPU is reported at once: 0 when
 * an engine can be asked of gen_open, else EXIT_USAGE (cuda with MTP) or
 * EXIT_FAIL (cuda without a usable GPU) with a one-line message in *err
 * (malloc'd), e.g. "--device cuda: no CUDA GPU or driver found". */
int         gen_device_check(const gen_device *d, char **err);
/* The engine d asks for (NULL = the CPU), as gen_new / gen_new_cuda
 * build it.  NULL with *err (malloc'd, one line) only for cuda: the
 * reasons of gen_device_check, or the GPU engine cannot be built. */
gen_engine *gen_open(const model *m, int max_seqs, int max_len, const gen_device *d, char **err);
/* "cuda" or "cpu": where e computes. */
const char *gen_device_name(const gen_engine *e);
void        gen_free(gen_engine *e);
/* Start a sequence; returns its slot, or -1 if full or too long.
 * Sampling draws from rng_derive(seed, stream). */
int  gen_add(gen_engine *e, const int *prompt, int n, const gen_params *p,
             uint64_t seed, uint64_t stream);
/* gen_add whose prompt's first n_shared tokens (a system prompt many
 * sequences start with) are a SHARED PREFIX: its K/V are computed once,
 * on the first gen_add_shared of those token ids (in this call, one
 * pass), kept while any slot's cache starts with them (removed slots
 * included), and read in place by every such sequence's attention
 * instead of being copied.  Keyed by the ids themselves; a slot holds at
 * most one, so at most max_seqs are kept.  Output bits are those of
 * gen_add (the same keys, read from another place).  Falls back
 * to gen_add when n_shared is not in [1, n-1], on the GPU engine, with
 * prefix reuse off, or with MTP drafting (its cache is not shared). */
int  gen_add_shared(gen_engine *e, const int *prompt, int n, int n_shared, const gen_params *p,
                    uint64_t seed, uint64_t stream);
/* One forward + sample for every running sequence; returns how many
 * are still running. */
int  gen_step(gen_engine *e);
int  gen_status(const gen_engine *e, int slot);       /* GEN_* */
/* Generated ids (and their log-probabilities under the sampling
 * distribution before temperature, i.e. the model's) so far. */
const int   *gen_output(const gen_engine *e, int slot, int *n);
const float *gen_logprobs(const gen_engine *e, int slot);
/* Free the slot.  Its cache stays readable for prefix reuse until the
 * slot is taken again. */
void gen_remove(gen_engine *e, int slot);

/* Resume a finished (not running) sequence: its cache is kept, the last
 * sampled token (if not yet in the cache) and ids[0..n) are queued and
 * the next gen_step generates from there with new parameters and RNG
 * stream.  gen_output then returns only the new generation.  The result
 * is bit-identical to gen_add of the whole context.  Returns 0, or -1 if
 * the slot is running or unused, or the context would not leave room for
 * one new token. */
int  gen_extend(gen_engine *e, int slot, const int *ids, int n, const gen_params *p,
                uint64_t seed, uint64_t stream);
/* Tokens of the slot's context so far (prompt, extensions and generated
 * ids): the ids ... ids+n a following gen_extend continues. */
const int *gen_context(const gen_engine *e, int slot, int *n);
/* Copy K/V rows of a cached prefix on gen_add (default on). */
void gen_set_prefix_reuse(gen_engine *e, int on);

/* Counters since gen_new (for progress lines and serve's /metrics).
 * Acceptance rate = accepted / drafted; mean tokens per verification
 * step = (accepted + verify_steps) / verify_steps. */
typedef struct {
    long steps;          /* gen_step calls that ran a forward pass */
    long rows;           /* token rows through the main model (prefill, decode, drafts) */
    long reused;         /* context tokens whose K/V were kept, shared or copied instead of computed */
    long generated;      /* tokens appended to outputs */
    long drafted;        /* MTP draft tokens verified */
    long accepted;       /* of which accepted */
    long verify_steps;   /* sequence-steps that verified at least one draft */
    /* Wall time in gen_step, split: steps that carried prompt rows
     * (prefill, whatever else rode along) and pure decoding steps, with
     * the tokens the latter appended: decode speed without prompt cost. */
    double prefill_s, decode_s;
    long decode_tokens;
} gen_stats;
gen_stats gen_get_stats(const gen_engine *e);

/* Logits of the last prompt position via the cache path (for tests):
 * out (V). */
void gen_prefill_logits(gen_engine *e, int slot, float *out);

/* Sampling from logits (V): returns the id; *logprob = log softmax. */
int  sample_logits(const float *logits, int V, const gen_params *p, rng_t *r,
                   float *logprob, float *scratch);

#endif
