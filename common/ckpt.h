/* ckpt.h — checkpoints: the single-file NAME.ckpt bundle and Hugging Face
 * model directories (man 5 ckpt).
 *
 * A .ckpt is a tar archive (libarchive, pax format, members in a fixed
 * order with zero timestamps so equal contents give equal bytes):
 *     config.json            Hugging Face Qwen3 keys (+ MTP settings)
 *     model.safetensors      HF tensor names; F32 (or BF16 on request)
 *     tokenizer.json         optional, passed through untouched
 *     optimizer.safetensors  optional: NAME.exp_avg / NAME.exp_avg_sq, F32
 *     trainer_state.json     optional: step, RNG state, data position...
 * Wherever a checkpoint is read, a directory holding the same files (a
 * Hugging Face model directory) is accepted too.  Reading checks every
 * tensor against config.json and refuses missing, extra, mis-shaped or
 * truncated data with a message naming the file and tensor. */
#ifndef HAT_CKPT_H
#define HAT_CKPT_H

#include "model.h"
#include "tokenizer.h"
#include "safetensors.h"

#include <jansson.h>

typedef struct {
    model  *m;
    char   *tokenizer;          /* tokenizer.json bytes or NULL */
    size_t  tokenizer_len;
    float  *opt_m, *opt_v;      /* AdamW moments laid out like m->params, or NULL */
    json_t *state;              /* trainer_state.json or NULL */
    int     dtype;              /* dtype of model.safetensors as read */
} ckpt;

/* Load a .ckpt file or a model directory.  0, or -1 after a diagnostic. */
int  ckpt_load(ckpt *c, const char *path);
/* The tokenizer to use with a loaded checkpoint: tpath if given, else the
 * bundled tokenizer.json.  *out is NULL when neither exists and required
 * is 0.  Returns 0, or -1 after a diagnostic naming the file (a missing
 * tokenizer when required says how to give one). */
int  ckpt_tokenizer(const ckpt *c, const char *ckpath, const char *tpath, int required,
                    tokenizer **out);
/* Write atomically (temp file + rename).  dtype: ST_F32 or ST_BF16 for
 * the model tensors; optimizer state is always F32. */
int  ckpt_save(const ckpt *c, const char *path, int dtype);
/* Write a Hugging Face directory that transformers uses as it is:
 * config.json (eos_token_id = <|im_end|> when unset), model.safetensors,
 * generation_config.json and, with a tokenizer, tokenizer.json and
 * tokenizer_config.json (hat's chat template from data/tokenizer/,
 * special tokens, EOS and pad).  Training state is not exported. */
int  ckpt_export_hf(const ckpt *c, const char *dir, int dtype);
void ckpt_free(ckpt *c);
int  ckpt_is_dir(const char *path);

/* Fill m->params (or a buffer laid out like it, with `suffix` appended
 * to every name) from a safetensors file, checking names and shapes. */
int  model_read_tensors(const model *m, float *base, const st_file *f, const char *suffix);
/* Serialise a buffer laid out like m->params. */
unsigned char *model_write_tensors(const model *m, const float *base, int dtype,
                                   const char *suffix, size_t *len);

#endif
