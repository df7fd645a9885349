/* hsa.h — harness-state augmentation (HSA): task-preserving rewrites of a
 * harness along five dimensions, and the relabelling that keeps a
 * trajectory correct under the rewritten harness.
 *
 *     hsa_vocab *v = hsa_vocab_load("train");          // data/hsa/train/
 *     hsa_opts o;  hsa_opts_default(&o);
 *     hsa_cache *c = hsa_cache_new();
 *     json_t *out = hsa_augment_record(c, v, &o, rec, seed, i * K + k, &why);
 *
 * The dimensions (man 1 hsa-augment) and their files:
 *   skill-id       hsa_skills.c   rename, inject distractors, mask, describe
 *   skill-content  hsa_skills.c   paraphrase, mask and reorder rules
 *   tools          hsa_tools.c    rename tools/params/loader, describe, reorder
 *   prompt         hsa_prompt.c   reorder blocks/items, perturb params, paraphrase
 *   hooks          hsa_hooks.c    retries, error format, envelope, messages
 * hsa_vocab.c holds the name generators and paraphrase banks (man 5
 * hsa-vocab), hsa_rewrite.c the built-in rewriter of any text,
 * hsa_text.c the wording strings of a harness, keeping names in step and
 * the rewrite entry point every dimension uses, hsa_bank.c the per-harness
 * banks written by an external rewriter (hsa-bank), hsa_relabel.c the
 * trajectory rewrite, hsa.c the glue.
 * A function (skill, tool, x-function of a parameter) never changes. */
#ifndef HAT_HSA_H
#define HAT_HSA_H

#include <jansson.h>
#include <stdint.h>

#include "rng.h"

enum { HSA_SKILL_ID, HSA_SKILL_CONTENT, HSA_TOOLS, HSA_PROMPT, HSA_HOOKS, HSA_NDIMS };
extern const char *const hsa_dim_names[HSA_NDIMS];  /* "skill-id", ... */

typedef struct {
    double p[HSA_NDIMS];  /* per-operation probability within each dimension */
    double mix;           /* fraction of outputs kept original */
} hsa_opts;

void hsa_opts_default(hsa_opts *o);            /* every p 0.5, mix 0 */
/* "skill-id,tools": listed dimensions at p, the others off.  -1 on an
 * unknown name (reported in *bad). */
int  hsa_opts_dims(hsa_opts *o, const char *list, double p, const char **bad);

/* --- vocabularies (hsa_vocab.c) ----------------------------------------- */
typedef struct hsa_vocab hsa_vocab;

/* "train", "heldout" (under data/hsa/) or a directory holding names.json,
 * paraphrases.json and hooks.json.  NULL after a diagnostic. */
hsa_vocab *hsa_vocab_load(const char *name);
void       hsa_vocab_free(hsa_vocab *v);
const char *hsa_vocab_name(const hsa_vocab *v);
const json_t *hsa_vocab_json(const hsa_vocab *v, const char *file); /* "names", ... */

/* Naming styles of the generators. */
enum { HSA_SNAKE, HSA_CAMEL, HSA_KEBAB, HSA_PINYIN };
/* Join words in a style ("live","price" → live_price, livePrice, live-price). */
char *hsa_style_join(int style, const char *const *words, int n);
/* A fresh name for a skill / tool / parameter / loader / loader argument of
 * the given function, not in `taken` (an object used as a set).  NULL when
 * the bank has no entry or every candidate is taken. */
char *hsa_name_skill(const hsa_vocab *v, rng_t *r, const char *function, const json_t *taken);
char *hsa_name_tool(const hsa_vocab *v, rng_t *r, const char *function, const json_t *taken);
char *hsa_name_param(const hsa_vocab *v, rng_t *r, const char *xfunction, const json_t *taken);
char *hsa_name_loader(const hsa_vocab *v, rng_t *r, const json_t *taken);
/* A distractor skill {name, function:"distractor", kind, description,
 * rules} drawn from the bank, its name not in taken; NULL if none. */
json_t *hsa_distractor(const hsa_vocab *v, rng_t *r, const json_t *taken);
/* Every name a generator can produce (for the disjointness tests):
 * kind "skill", "tool", "param", "loader", "distractor". */
json_t *hsa_name_space(const hsa_vocab *v, const char *kind, const char *function);
/* A paraphrase of text from a bank section ("rules", "skill_descriptions",
 * "tool_descriptions", "param_descriptions", "loader", "blocks/ID"), or
 * NULL when the bank has none (borrowed). */
const char *hsa_paraphrase(const hsa_vocab *v, rng_t *r, const char *section, const char *text);
/* All the paraphrases of text in a section (borrowed), or NULL. */
const json_t *hsa_paraphrases(const hsa_vocab *v, const char *section, const char *text);

/* A per-harness bank written by hsa-bank (man 1 hsa-bank): alternatives
 * of each text, keyed by content hash, used before the built-in rewriter
 * by vocabularies of the bank's split.  "NAME+BANK.json" as a vocabulary
 * name does the same.  0, or -1 after a diagnostic. */
int hsa_vocab_add_bank(hsa_vocab *v, const char *path);
/* The bank's alternatives of text for this vocabulary's split, or NULL. */
const json_t *hsa_vocab_bank(const hsa_vocab *v, const char *text);
/* How many of h's distinct wording strings the vocabulary's bank has
 * alternatives for; *total (may be NULL) gets the number of distinct
 * strings.  A bank made for another harness covers 0. */
size_t hsa_vocab_bank_coverage(const hsa_vocab *v, const json_t *h, size_t *total);
/* The split of the vocabulary: "train" or "heldout" (rewrite.json). */
const char *hsa_vocab_split(const hsa_vocab *v);

/* --- the built-in rewriter (hsa_rewrite.c) -------------------------------- */
typedef struct hsa_rewriter hsa_rewriter;
typedef struct { size_t start, len; } hsa_span;
/* From rewrite.json (file names the diagnostics); NULL after one. */
hsa_rewriter *hsa_rewriter_load(const json_t *j, const char *file);
void          hsa_rewriter_free(hsa_rewriter *w);
const char   *hsa_rewriter_split(const hsa_rewriter *w);
const hsa_rewriter *hsa_vocab_rewriter(const hsa_vocab *v);   /* NULL: none */
/* rules.json's rules that skill-content may add to a skill (an array of
 * strings), or NULL when the vocabulary has none. */
const json_t *hsa_vocab_added_rules(const hsa_vocab *v);
/* Every synonym alternative, as a set (for the disjointness tests). */
json_t *hsa_rewriter_alternatives(const hsa_rewriter *w);
/* What a rewrite must keep: numbers and number words, {placeholders},
 * quoted strings, `code`, identifier-like tokens and the words in names
 * (a set).  Fills up to max spans in text order, returns how many. */
int  hsa_protected(const char *text, const json_t *names, hsa_span *out, int max);
/* A token that reads as an identifier: snake_case, camelCase, digits, @. */
int  hsa_identifier_like(const char *s, size_t n);
/* 1 when alt is a valid rewrite of orig: different, and the same protected
 * spans (as a multiset).  0 with *why (malloc'd) otherwise. */
int  hsa_rewrite_check(const char *orig, const char *alt, const json_t *names, char **why);
/* The analysis of a text (pieces, their structural alternatives, synonym
 * sites), a JSON value to cache; hsa_rewrite_draw makes one rewrite from
 * it, or NULL when the text offers nothing to change.  malloc'd. */
json_t *hsa_rewrite_analyse(const hsa_rewriter *w, const char *text, const json_t *names);
char   *hsa_rewrite_draw(const json_t *analysis, rng_t *r);
/* Length of a {placeholder} at s, braces included; 0 if none. */
size_t  hsa_placeholder_len(const char *s);

/* {placeholder} templates: match text against tmpl, collecting the values
 * into vars (an object).  1 on a match, 0 otherwise. */
int  hsa_template_match(const char *tmpl, const char *text, json_t *vars);
/* The placeholder names of a template, as a sorted "a,b" string (malloc'd). */
char *hsa_template_keys(const char *tmpl);

/* --- augmentation --------------------------------------------------------- */
/* What a trajectory needs from its harness, found under the old harness.
 * Masking and constraint perturbation respect it; NULL = no trajectory. */
typedef struct {
    json_t *keep_skills;      /* set: skill names the trajectory loads */
    json_t *keep_functions;   /* set: skill functions the task's gold needs */
    int    reply_chars;       /* final reply, Unicode code points; -1 none */
    int    reply_emoji;
    int    tool_calls;        /* most calls after one viewer message */
    int    turns;             /* most assistant turns per viewer message */
    int    retries;           /* most retries of one failing call, pruned ones included */
    int    gave_up;           /* a failing call was abandoned: retries exact */
    int    budget_spent;      /* abandoned with retries left: the call and turn
                                 budgets stopped it, so they must not move */
    int    format_rejected;   /* a reply_format hook fired: limits frozen */
    int    final_over;        /* final reply already breaks the old limits */
} hsa_needs;

/* What a run did, per dimension (hsa-augment --stats, man 1). */
typedef struct {
    long    variants;
    long    ops[HSA_NDIMS];           /* operations applied */
    long    texts[HSA_NDIMS];         /* texts drawn for rewriting */
    long    rewritten[HSA_NDIMS];
    long    unrewritable[HSA_NDIMS];  /* drawn, but no rewrite exists */
    json_t *stuck;                    /* text → dimension, the first 64 */
} hsa_stats;

void    hsa_stats_add(hsa_stats *to, const hsa_stats *from);
void    hsa_stats_count_ops(hsa_stats *st, const json_t *ops);
/* {"metric":"hsa","variants":N,"dims":{dim:{p,ops,texts,rewritten,
 * unrewritable[,note]}},"unrewritable":[{dim,text}]}; a dimension that was
 * on and applied nothing carries a note. */
json_t *hsa_stats_json(const hsa_stats *st, const hsa_opts *o);
void    hsa_stats_free(hsa_stats *st);

/* One augmentation in progress. */
typedef struct {
    const hsa_vocab *v;
    const hsa_opts  *o;
    rng_t           *r;
    json_t          *h;       /* the harness being rewritten (owned) */
    json_t          *ops;     /* array of {"dim","op",...} */
    const hsa_needs *need;    /* NULL in harness-only mode */
    json_t          *skill_map;  /* old skill name → new name */
    const char      *invalid;    /* set when no valid variant exists */
    json_t          *names;      /* names of the input harness: kept by rewrites */
    json_t          *acache;     /* text → rewriter analysis (hsa_cache's) */
    hsa_stats       *stats;      /* may be NULL */
} hsa_ctx;

/* Apply every enabled dimension to a copy of h.  Returns the new harness;
 * ops receives the operations.  *invalid (may be NULL) is set to a reason
 * when a constraint could not be kept (hsa_valid false). */
json_t *hsa_augment_harness(const hsa_vocab *v, const hsa_opts *o, rng_t *r,
                            const json_t *h, const hsa_needs *need,
                            json_t *ops, json_t **skill_map, const char **invalid);

/* Per-dimension passes (one per file; called by hsa_augment_harness). */
void hsa_skill_ids(hsa_ctx *c);
void hsa_skill_content(hsa_ctx *c);
void hsa_tools(hsa_ctx *c);
void hsa_prompt(hsa_ctx *c);
void hsa_hooks(hsa_ctx *c);
/* Append {"dim":..,"op":..} + extra key/value pairs (steals the values;
 * NULL-terminated list of const char *key, json_t *value). */
void hsa_op(hsa_ctx *c, int dim, const char *op, ...);
/* s with whole-word occurrences of `from` replaced by `to` (a word is a
 * run of letters, digits, '_' and '-'); malloc'd. */
char *hsa_replace_word(const char *s, const char *from, const char *to);
/* Set of names in use in the tool namespace (tools + loader) or skills. */
json_t *hsa_taken_names(const json_t *h);

/* --- wording strings (hsa_text.c) ------------------------------------------ */
/* Called for each wording string: parent[key] (an object) or parent[idx]
 * (an array, key NULL) holds text; kind is skill_description, rule,
 * tool_description, param_description, loader, block or hook; path the
 * JSON pointer. */
typedef void (*hsa_text_fn)(json_t *parent, const char *key, size_t idx, const char *text,
                            const char *kind, const char *path, void *ud);
/* Every wording string of h; flags: HSA_TEXTS_HOOKS adds the hook
 * messages, HSA_TEXTS_PATHS fills path (else ""). */
enum { HSA_TEXTS_HOOKS = 1, HSA_TEXTS_PATHS = 2 };
void    hsa_texts(json_t *h, int flags, hsa_text_fn fn, void *ud);
/* Skill, tool, parameter, loader and loader-argument names, as a set. */
json_t *hsa_harness_names(const json_t *h);
/* s with every mention of a name in map (old → new) renamed at once,
 * whole-word; a name that is a plain lowercase word only where the text
 * points at it as a name (quoted, `code`, or beside skill/tool/loader/
 * parameter).  malloc'd. */
char   *hsa_rename_mentions(const char *s, const json_t *map);
/* After the dimensions: rename, in every text, the names the variant changed. */
void    hsa_keep_names(hsa_ctx *c);
/* Identifier-like words a text of h may use (names, functions, params,
 * hooks, fault codes, block ids), as a set; and the identifier-like or
 * `code` words of text not in it. */
json_t *hsa_known_words(const json_t *h);
json_t *hsa_unknown_mentions(const char *text, const json_t *known);
/* A rewrite of text for dimension dim (the per-harness bank, the exact
 * bank's section, the built-in rewriter; checked by hsa_rewrite_check),
 * or NULL, counted as unrewritable.  malloc'd. */
char   *hsa_rewrite_text(hsa_ctx *c, int dim, const char *section, const char *text);

/* --- per-harness banks (hsa_bank.c, man 1 hsa-bank) ------------------------ */
/* The content hash keying a text in a bank: 16 hex digits (FNV-1a 64). */
char   *hsa_text_hash(const char *text);
/* A bank file, checked; NULL after a diagnostic. */
json_t *hsa_bank_load(const char *path);
/* Send every distinct wording string of h to cmd (sh -c; requests
 * {"id":"HASH:SPLIT","hash","split","kind","text","n","keep":[...]} on its
 * stdin, answers {"id","alternatives":[...]} on its stdout) and return the
 * bank {"bank":"hsa","version":1,"harness","texts":{HASH:{text,kind,paths,
 * train,heldout}},"rejected":[{hash,split,text,alternative,why}]}.  Each
 * rejected alternative is reported on stderr.  NULL after a diagnostic
 * (the command failed, or printed a line that is not an answer). */
json_t *hsa_bank_build(const json_t *h, const char *cmd, int n);

/* --- trajectories (hsa_relabel.c) ----------------------------------------- */
/* Read what the messages need under harness h.  0, or -1 with *why. */
int  hsa_needs_scan(hsa_needs *n, const json_t *rec, const json_t *h, const char **why);
void hsa_needs_free(hsa_needs *n);
/* Rewrite messages (in place) from oldh to newh.  0, or -1 with *why set
 * to the reason the trajectory cannot be kept correct. */
int  hsa_relabel(json_t *messages, const json_t *oldh, const json_t *newh,
                 const json_t *skill_map, const char **why);
/* Reply length and emoji are measured by harness_measure_text
 * (harness_compile.h), as the simulator and the judge measure them. */

/* --- records (hsa.c) -------------------------------------------------------- */
typedef struct hsa_cache hsa_cache;  /* remembers the last inline harness */
hsa_cache *hsa_cache_new(void);
void       hsa_cache_free(hsa_cache *c);

/* The variant of one input for stream id (i*K+k): a trajectory record
 * (with "messages") or, with rec NULL, the harness alone.  deflt is the
 * --harness used when the record has none.  Returns a new record, or NULL
 * with *err (a message for "FILE:LINE: ...") on bad input. */
json_t *hsa_augment_record(hsa_cache *cache, const hsa_vocab *v, const hsa_opts *o,
                           const json_t *rec, const json_t *deflt,
                           uint64_t seed, uint64_t stream, int k, const char **err);

/* Records first..first+n-1 (recs NULL: the harness alone, n = 1), K
 * variants each, in parallel: lines[j*K+k] receives the compact JSON text
 * (malloc'd, no newline) or NULL, errs[j] the error of record j or NULL.
 * bt keeps one cache per thread from batch to batch, and their statistics
 * (hsa_batch_stats: the sum so far). */
typedef struct hsa_batch hsa_batch;
hsa_batch *hsa_batch_new(void);
void       hsa_batch_free(hsa_batch *bt);
const hsa_stats *hsa_batch_stats(hsa_batch *bt);
void hsa_augment_batch(hsa_batch *bt, const hsa_vocab *v, const hsa_opts *o,
                       json_t *const *recs, size_t n, const json_t *deflt, uint64_t seed,
                       uint64_t first, int K, char **lines, const char **errs);
/* What the variants drawn through a cache did. */
const hsa_stats *hsa_cache_stats(const hsa_cache *c);

/* Raw lines of a traj file ("-" = stdin, .gz transparently), so that a
 * repeated inline harness is parsed once.  hsa_reader_line: 1 and the
 * line (not NUL-terminated; valid until the next call), 0 at the end, -1
 * after a diagnostic.  Blank lines are skipped. */
typedef struct hsa_reader hsa_reader;
hsa_reader *hsa_reader_open(const char *path);
int         hsa_reader_line(hsa_reader *r, const char **line, size_t *len, long *lineno);
const char *hsa_reader_name(const hsa_reader *r);
void        hsa_reader_close(hsa_reader *r);
/* Parse one line; an inline harness byte-identical to the previous line's
 * is shared, not reparsed.  NULL after "FILE:LINE: invalid JSON ...". */
json_t *hsa_parse_record(hsa_reader *r, const char *line, size_t len);

#endif
