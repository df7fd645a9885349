/* ifeval.h — Google's IFEval verifiable instructions in C.
 *
 * The 25 instruction ids of the original benchmark (instructions_registry.py)
 * with the kwargs of input_data.jsonl, strict and loose verdicts exactly as
 * evaluation_lib.py defines them, and the accuracy report (prompt level,
 * instruction level, per category "tier0" and per instruction "tier1").
 *
 * The original leans on three Python libraries; their equivalents live here:
 *   - Python `re` → PCRE2 in UTF+UCP mode with Python's \s spelled out
 *     (ifeval_text.c);
 *   - nltk's Punkt sentence tokenizer (English parameters from
 *     data/ifeval/punkt_english/) and nltk.word_tokenize (ifeval_text.c);
 *   - langdetect (seeded) → a deterministic script + word/letter evidence
 *     detector over the languages IFEval uses (ifeval_lang.c; see
 *     ifeval(1) for where it can differ).
 *
 * Files: ifeval.c (registry, kwargs, strict/loose, aggregation),
 * ifeval_checks.c (the 25 checkers), ifeval_text.c (regex helpers, word and
 * sentence splitting), ifeval_lang.c (language detection). */
#ifndef HAT_IFEVAL_H
#define HAT_IFEVAL_H

#include <jansson.h>
#include <stddef.h>

/* ---- text helpers (ifeval_text.c) -------------------------------------- */

/* Load the Punkt parameters; dir NULL = data/ifeval/punkt_english found by
 * hat_data_path.  0, or -1 with *err (malloc'd).  Called lazily by
 * ifeval_count_sentences with NULL. */
int    ifeval_punkt_load(const char *dir, char **err);
/* len(nltk Punkt English .tokenize(text)); -1 if the parameters are missing. */
long   ifeval_count_sentences(const char *text);
/* Spans of the Punkt sentences (byte offsets), caller frees *spans (pairs). */
long   ifeval_punkt_spans(const char *text, size_t **spans);
/* len(RegexpTokenizer(r"\w+").tokenize(text)). */
long   ifeval_count_words(const char *text);
/* nltk.word_tokenize(text): tokens as a NULL-terminated malloc'd array. */
char **ifeval_word_tokenize(const char *text, long *n);
void   ifeval_strv_free(char **v);
/* Python str.isupper() / str.islower() on UTF-8. */
int    ifeval_isupper(const char *s, size_t n);
int    ifeval_islower(const char *s, size_t n);
/* Python str.strip() (Unicode whitespace): returns a malloc'd copy. */
char  *ifeval_strip(const char *s, size_t n);
/* Python str.lower() (simple case mapping): malloc'd copy. */
char  *ifeval_lower(const char *s);

/* UTF-8 helpers: the code point at s[i] (invalid bytes read as U+FFFD,
 * one byte), the start of the one before byte i, Python's str.isspace(). */
int    ifv_utf8_at(const char *s, size_t n, size_t i, size_t *len);
size_t ifv_utf8_prev(const char *s, size_t i);
int    ifv_isspace(int c);

/* Python-compatible regex helpers on PCRE2 (UTF, UCP, newline LF).
 * flags: IFV_I (IGNORECASE), IFV_M (MULTILINE). */
enum { IFV_I = 1, IFV_M = 2 };
/* Number of non-overlapping matches (len(re.findall)); -1 on a bad pattern. */
long   ifeval_re_count(const char *pattern, int flags, const char *s);
/* 1 if re.search finds a match, 0 if not, -1 on a bad pattern. */
int    ifeval_re_search(const char *pattern, int flags, const char *s);
/* re.sub(pattern, repl, s) with PCRE2 replacement syntax ($1, $0);
 * malloc'd result, NULL on a bad pattern. */
char  *ifeval_re_sub(const char *pattern, int flags, const char *repl, const char *s);
/* re.findall(pattern, s) for a pattern without groups: the matches. */
char **ifeval_re_findall(const char *pattern, int flags, const char *s, long *n);
/* re.split(pattern, s): pieces as a NULL-terminated array. */
char **ifeval_re_split(const char *pattern, int flags, const char *s, long *n);

/* ---- language detection (ifeval_lang.c) -------------------------------- */

/* Load data/ifeval/languages.tsv (NULL = default).  0 or -1 with *err. */
int    ifeval_lang_load(const char *path, char **err);
/* ISO 639-1 code (langdetect's codes, e.g. "en", "zh-cn") of the dominant
 * language, or NULL when the text has no letters (langdetect raises then,
 * and the original counts the instruction as followed). */
const char *ifeval_detect_language(const char *text);

/* ---- instructions (ifeval_checks.c, ifeval.c) -------------------------- */

#define IFEVAL_N_INSTRUCTIONS 25
/* The instruction ids in registry order; NULL-terminated. */
extern const char *const ifeval_instruction_ids[];

typedef struct ifeval_instr ifeval_instr;   /* one instruction with its kwargs */

/* Build an instruction from its id and kwargs (a JSON object; keys with
 * null values are ignored, as in the original's build_description(**kw)
 * defaults).  prompt is the prompt text (unused by the 25, kept for
 * parity).  NULL with *err on an unknown id, unknown or missing kwargs, or
 * a value the original rejects. */
ifeval_instr *ifeval_instr_new(const char *id, json_t *kwargs, char **err);
void          ifeval_instr_free(ifeval_instr *in);
/* instruction.check_following(response): 1 followed, 0 not. */
int           ifeval_instr_check(const ifeval_instr *in, const char *response);

/* Verdicts for one prompt: strict[i] and loose[i] for each instruction. */
typedef struct {
    int  n;
    int *strict, *loose;
} ifeval_verdict;

/* Score a response against ids/kwargs (JSON arrays).  0, or -1 with *err. */
int  ifeval_score(json_t *ids, json_t *kwargs, const char *response,
                  ifeval_verdict *v, char **err);
void ifeval_verdict_free(ifeval_verdict *v);
/* The 8 loose variants of evaluation_lib.test_instruction_following_loose,
 * in its order; caller frees each. */
void ifeval_loose_variants(const char *response, char *out[8]);

/* Accumulated report (evaluation_lib.print_report, strict and loose). */
typedef struct ifeval_report ifeval_report;
ifeval_report *ifeval_report_new(void);
void    ifeval_report_add(ifeval_report *r, json_t *ids, const ifeval_verdict *v);
/* {"aggregate":{...},"counts":{...},"by_instruction":{"strict":{"tier0",
 * "tier1"},"loose":{...}}}; counts gets inputs/missing from the caller. */
json_t *ifeval_report_json(const ifeval_report *r, long inputs, long missing);
void    ifeval_report_free(ifeval_report *r);

#endif
