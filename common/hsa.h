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
 * hsa-vocab), hsa_relabel.c the trajectory rewrite, hsa.c the glue.
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
 * (malloc'd, no newline) or NULL, errs[j] the error of record j or NULL. */
void hsa_augment_batch(const hsa_vocab *v, const hsa_opts *o, json_t *const *recs, size_t n,
                       const json_t *deflt, uint64_t seed, uint64_t first, int K,
                       char **lines, const char **errs);

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
