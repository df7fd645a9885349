/* tok_internal.h — what the tokenizer's files share among themselves
 * (tokenizer.c: loading, BPE, decoding; tok_text.c: the text pipeline in
 * front of BPE; tok_train.c: the trainer).  Not for other callers: use
 * tokenizer.h. */
#ifndef HAT_TOK_INTERNAL_H
#define HAT_TOK_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <jansson.h>
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

/* --- the GPT-2 byte <-> unicode alphabet ---------------------------------
 * Printable bytes stand for themselves; the other 68 bytes are mapped to
 * U+0100.. in order, so every byte becomes one visible character.  These
 * 256 characters, in codepoint order, are also the first 256 ids that
 * tok-train assigns. */
extern uint16_t tok_byte_cp[256];      /* byte -> codepoint */
void tok_bytelevel_init(void);         /* idempotent, thread-safe */
/* Codepoint -> byte, or -1 if cp is not one of the 256 characters. */
int  tok_cp_byte(int32_t cp);
/* Byte-level string of raw bytes (appended to b). */
#include "util.h"
void tok_bytes_to_bl(sbuf *b, const unsigned char *s, size_t n);
/* Raw bytes of a byte-level string; -1 if a character is not in the
 * alphabet (or the string is not UTF-8). */
int  tok_bl_to_bytes(sbuf *b, const char *s, size_t n);

/* Replace invalid UTF-8 by U+FFFD, one per maximal invalid subsequence
 * (the Unicode / WHATWG rule, as Rust's from_utf8_lossy).  Appends to b. */
void tok_utf8_lossy(sbuf *b, const char *s, size_t n);

/* --- the text pipeline: added tokens, normalizer, pre-tokenizer ----------- */
enum { TOK_NORM_NONE, TOK_NORM_NFC, TOK_NORM_NFD, TOK_NORM_NFKC, TOK_NORM_NFKD };

typedef struct {
    char *content;
    size_t len;
    int id;
    int special, lstrip, rstrip, single_word, normalized;
} tok_added;

#define TOK_MAX_SPLITS 4

typedef struct {
    int         norm;                     /* TOK_NORM_* */
    pcre2_code *re[TOK_MAX_SPLITS];      /* Split regexes, applied in turn */
    int         nre;
    tok_added  *added;                    /* sorted by content */
    int         nadded;
    /* Added tokens whose content starts with byte c: a bitmap, so plain
     * text is scanned without looking at the token list. */
    uint8_t     first[256];
    int         any_normalized, any_raw;
    int         bytelevel;                /* a ByteLevel step was seen */
} tok_pipe;

/* Build from a tokenizer.json root (normalizer, pre_tokenizer,
 * added_tokens).  0, or -1 with *err. */
int  tok_pipe_init(tok_pipe *p, const json_t *root, char **err);
void tok_pipe_free(tok_pipe *p);

/* Called for each piece in order: an added token (id >= 0, s/n its text)
 * or a pre-tokenised word (id == -1, s/n its raw UTF-8 bytes). */
typedef void (*tok_piece_fn)(void *ctx, const char *s, size_t n, int id);

/* Run text (valid UTF-8) through the pipeline.  match data is the
 * caller's (pcre2_match_data_create(1, NULL)), one per thread. */
void tok_pipe_run(const tok_pipe *p, const char *text, size_t len,
                  pcre2_match_data *md, tok_piece_fn fn, void *ctx);
/* The same, but no added token is matched where it would overlap one of
 * the plain ranges (nplain pairs of offset, length into text): there its
 * characters are plain text (untrusted input).  Everything else, the
 * pre-tokenizer's pieces included, is as tok_pipe_run makes it. */
void tok_pipe_run_ranges(const tok_pipe *p, const char *text, size_t len, const size_t *plain,
                         size_t nplain, pcre2_match_data *md, tok_piece_fn fn, void *ctx);

/* malloc'd error string. */
char *tok_errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
