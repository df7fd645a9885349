/* tokenizer.h — byte-level BPE tokenizers in the Hugging Face format.
 *
 * Loads the tokenizer.json that ships with Qwen3, Llama 3 and GPT-2 style
 * checkpoints (and the ones tok-train writes) and encodes text to ids and
 * ids back to text exactly as the Hugging Face `tokenizers` library does
 * with add_special_tokens=false: added tokens (<|im_start|>, <think>, ...)
 * are matched literally in the raw text first, every other stretch is
 * NFC-normalised, split by the pre-tokenizer regex (PCRE2, JIT), mapped
 * byte by byte to the GPT-2 alphabet and merged by BPE rank.  man 5
 * tokenizer.json says which subset of the format is accepted; anything
 * else is refused at load time with a message naming the feature, never
 * approximated.
 *
 * Usage:
 *
 *     char *err;
 *     tokenizer *t = tok_load("tokenizer.json", &err);
 *     if (!t) { hat_errat("tokenizer.json", 0, "%s", err); free(err); ... }
 *     tok_ids ids = {0};
 *     if (tok_encode(t, text, len, &ids) < 0) ... invalid UTF-8 ...
 *     size_t n;
 *     char *back = tok_decode(t, ids.v, ids.n, 0, &n);   // == text
 *     free(back); tok_ids_free(&ids); tok_free(t);
 *
 * Text is UTF-8.  Invalid UTF-8 is refused by tok_encode (it returns -1
 * and leaves the output as it was; tok_utf8_check says where); decoding
 * ids whose bytes do not form valid UTF-8 replaces each maximal invalid
 * subsequence with U+FFFD, as the Hugging Face decoder does.
 *
 * Thread safety: a loaded tokenizer is read-only except for its word
 * cache, which is guarded by a mutex taken with trylock (a thread that
 * finds it busy just computes the word), so one tokenizer may be shared
 * by any number of threads encoding at once. */
#ifndef HAT_TOKENIZER_H
#define HAT_TOKENIZER_H

#include <jansson.h>
#include <stddef.h>

typedef struct tokenizer tokenizer;

/* A growable id list; tok_encode appends to it.  Zero-initialise. */
typedef struct {
    int   *v;
    size_t n, cap;
} tok_ids;

void tok_ids_push(tok_ids *a, int id);
void tok_ids_free(tok_ids *a);

/* Load a tokenizer.json (plain or .gz).  NULL with *err (malloc'd, the
 * caller frees) on failure; err names the unsupported feature. */
tokenizer *tok_load(const char *path, char **err);
/* The same from the file's text (a checkpoint bundle's member): the
 * vocabulary and merges are read straight from the text, not through a
 * jansson tree (3x faster on Qwen3's 11 MB file); same result and errors. */
tokenizer *tok_from_text(const char *text, size_t len, char **err);
/* The same from an already parsed object. */
tokenizer *tok_from_json(const json_t *root, char **err);
void       tok_free(tokenizer *t);

/* Encode len bytes of UTF-8 text, appending ids to *out.  Returns 0, or
 * -1 if the text is not valid UTF-8 (nothing appended). */
int tok_encode(const tokenizer *t, const char *text, size_t len, tok_ids *out);

/* Untrusted text (what a viewer typed, a tool's result, world data) must
 * not become control tokens: "<|im_end|>" typed by a viewer is the
 * characters it is made of.  tok_encode_ranges encodes text as tok_encode
 * does, except that no added token is matched where it would overlap one
 * of the nplain ranges (pairs of offset, length): Hugging Face's
 * split_special_tokens, applied to every added token (Qwen3's
 * <tool_response> and <think> are not marked special, yet structure the
 * conversation as much as <|im_start|>), and to those ranges only, so the
 * ids elsewhere, and everywhere when the ranges hold no added token's
 * text, are tok_encode's.  tok_encode_plain: the whole text untrusted. */
int tok_encode_ranges(const tokenizer *t, const char *text, size_t len, const size_t *plain,
                      size_t nplain, tok_ids *out);
int tok_encode_plain(const tokenizer *t, const char *text, size_t len, tok_ids *out);

/* Encoding a list of segments into ids plus a per-token mask (the chat
 * encoder's loss mask): each segment is encoded on its own and its tokens
 * get the segment's mask value.  The ids equal tok_encode of the joined
 * text whenever every boundary between segments touches an added token
 * (as in ChatML: ...<|im_start|>assistant\n | answer<|im_end|> | \n...),
 * because added tokens split the text before BPE anyway. */
typedef struct {
    const char   *text;
    size_t        len;
    int           mask;     /* e.g. 1 = the assistant wrote it */
    const size_t *plain;    /* untrusted ranges in text (tok_encode_ranges), or NULL */
    size_t        nplain;
} tok_segment;

int tok_encode_segments(const tokenizer *t, const tok_segment *seg, size_t nseg,
                        tok_ids *ids, tok_ids *mask);

/* Decode ids to a malloc'd NUL-terminated string (it may hold NUL bytes:
 * *len says how long it is).  Added tokens are kept unless
 * TOK_SKIP_SPECIAL is given, which drops those marked special.  Returns
 * NULL if an id is outside [0, tok_vocab_size). */
enum { TOK_SKIP_SPECIAL = 1 };
char *tok_decode(const tokenizer *t, const int *ids, size_t n, int flags, size_t *len);
/* tok_decode for what a model generated: a model may have more ids than
 * its tokenizer (padding rows of the embedding, as Qwen3's), and such an
 * id (or an unused one) reads as U+FFFD, as an undecodable byte would,
 * instead of failing the whole decode.  Never NULL. */
char *tok_decode_model(const tokenizer *t, const int *ids, size_t n, int flags, size_t *len);

/* Id of a token given as it appears in tokenizer.json (a byte-level string
 * such as "Ġthe", or an added token's content such as "<|im_end|>"), or
 * -1.  tok_token_str is the inverse (NULL for an unused id). */
int         tok_token_id(const tokenizer *t, const char *token);
const char *tok_token_str(const tokenizer *t, int id);
int         tok_is_special(const tokenizer *t, int id);
/* The ids of the model vocabulary that are no added token, special or
 * not (<tool_call> is added but not special), ascending, in *ids
 * (malloc'd); their count. */
size_t      tok_ordinary_ids(const tokenizer *t, int **ids);
/* One more than the largest id (model vocabulary and added tokens). */
int         tok_vocab_size(const tokenizer *t);

/* -1 if s[0..len) is valid UTF-8 (Unicode scalar values, shortest form),
 * else the byte offset of the first invalid sequence. */
long tok_utf8_check(const char *s, size_t len);

/* --- training (tok_train.c) ------------------------------------------ */

/* A trainer reads text, counts pre-tokenised words and learns merges.  It
 * uses the normalizer, pre-tokenizer, decoder and added tokens of a
 * template tokenizer.json (data/tokenizer/template.json by default: the
 * Qwen3 regex and the chat special tokens), whose model part is ignored. */
typedef struct tok_trainer tok_trainer;

tok_trainer *tok_trainer_new(const json_t *template_json, char **err);
void         tok_trainer_free(tok_trainer *tr);
/* Count the words of one text (UTF-8; -1 if invalid). */
int          tok_trainer_add(tok_trainer *tr, const char *text, size_t len);
size_t       tok_trainer_words(const tok_trainer *tr);   /* distinct words */

typedef struct {
    int  vocab_size;      /* total ids, added tokens included */
    long min_frequency;   /* a merge needs a pair seen this often (>= 1) */
    int  progress;        /* progress lines on stderr */
} tok_train_opts;

/* Learn merges and return the finished tokenizer.json (new reference), or
 * NULL with *err. */
json_t *tok_trainer_finish(tok_trainer *tr, const tok_train_opts *o, char **err);

#endif
