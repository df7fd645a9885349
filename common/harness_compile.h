/* harness_compile.h — the harness as every stage reads it: one immutable,
 * content-hashed view of the JSON harness, made once per distinct harness.
 *
 * What a harness *means* (which tool serves a function, the reply limits,
 * the retry policy, what counts as a character or an emoji) is computed
 * here and nowhere else: the simulator, the teacher, the judge, HSA,
 * rollout, grpo and serve all read it through this view, so they cannot
 * disagree.  Compiling also validates: a harness harness-lint rejects does
 * not compile, so no stage accepts what lint rejects.
 *
 *     harness_compiled *c = harness_compile(h, &warnings, &err);  // lint + index
 *     const harness_limits *L = harness_compiled_limits(c);
 *     harness_measure m;  harness_measure_text(reply, &m);       // chars, emoji
 *     if (L->max_chars >= 0 && m.chars > L->max_chars) ...
 *     harness_compiled_free(c);
 *
 * The view holds a reference to h: do not change h in place after
 * compiling it.  Two harnesses with the same content (the same JSON, keys
 * in any order) have the same hash, and caches key on that hash, not on
 * the address of a json_t. */
#ifndef HAT_HARNESS_COMPILE_H
#define HAT_HARNESS_COMPILE_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* The limits a harness states, resolved once.  max_chars and max_emoji
 * are the prompt params named by hooks.reply_format's max_chars_param /
 * max_emoji_param (default "max_chars" / "max_emoji"); they bind the reply
 * whether or not a reply_format hook enforces them at run time
 * (format_hook says whether one does). */
typedef struct {
    long max_chars, max_emoji;         /* -1 when the harness states none */
    long max_tool_calls, max_turns;    /* prompt params; -1 when absent */
    long max_retries;                  /* hooks.tool_retry.max_retries; 0 when absent */
    int  format_hook;                  /* hooks.reply_format is present */
} harness_limits;

/* The one reply measure.  chars: Unicode code points, each byte of an
 * invalid UTF-8 sequence counting as one (it shows as U+FFFD).  emoji:
 * grapheme clusters (UAX #29, as utf8proc segments them) that hold an
 * Extended_Pictographic code point shown as an emoji (at or above U+2190,
 * or any with U+FE0F), a keycap (U+20E3) or a regional-indicator flag;
 * so a skin tone, a ZWJ family or a flag is one emoji, ⭐ is one, © and ™
 * are none.  invalid: bytes that are not UTF-8. */
typedef struct { long chars, emoji, invalid; } harness_measure;
void harness_measure_text(const char *text, harness_measure *m);

/* Resolve the limits of a JSON harness (the function compile uses; for
 * code that holds a harness it has not compiled, such as HSA's relabeller). */
void harness_resolve_limits(const json_t *h, harness_limits *L);
/* Whether text breaks limits L: NULL when it holds them, else a message
 * ("N characters, at most M allowed", "N emoji, at most M allowed";
 * malloc'd).  The words sim's reply_format hook and the judge both use. */
char *harness_limits_broken(const harness_limits *L, const char *text);

typedef struct harness_compiled harness_compiled;

/* Validate h as harness-lint does and build its view.  Lint warnings are
 * appended to *warnings (when not NULL; a new array is made if *warnings
 * is NULL) as {path, severity, message}; the first lint error fails the
 * compile: NULL with *err (malloc'd, "PATH: message", with the number of
 * further errors).  h is borrowed and referenced by the view. */
harness_compiled *harness_compile(const json_t *h, json_t **warnings, char **err);
void harness_compiled_free(harness_compiled *c);

const json_t *harness_compiled_json(const harness_compiled *c);
/* FNV-1a 64 of the canonical text (compact, keys sorted). */
uint64_t harness_compiled_hash(const harness_compiled *c);
/* Same content (hash and canonical text equal). */
int      harness_compiled_same(const harness_compiled *a, const harness_compiled *b);
const harness_limits *harness_compiled_limits(const harness_compiled *c);

/* A tool as a call is checked against it: parameters.properties in order
 * (each one's type and x-function, NULL when not strings, and its
 * minimum, maximum and enum as they stand, NULL when absent) and
 * parameters.required (borrowed, as it stands). */
typedef struct {
    const char   *name, *type, *x_function;
    const json_t *minimum, *maximum, *allowed;
} harness_prop;
typedef struct {
    const char          *function;
    const json_t        *required;
    const harness_prop  *params;
    size_t               nparams;
} harness_tool;
/* The first tool named name (NULL when none), and its parameter name. */
const harness_tool *harness_compiled_tool_view(const harness_compiled *c, const char *name);
const harness_prop *harness_tool_prop(const harness_tool *t, const char *name);
/* Lookups by index (borrowed; NULL when absent). */
const json_t *harness_compiled_tool(const harness_compiled *c, const char *name);
const json_t *harness_compiled_tool_for(const harness_compiled *c, const char *function);
const json_t *harness_compiled_skill(const harness_compiled *c, const char *name);
const json_t *harness_compiled_skill_for(const harness_compiled *c, const char *function);
/* hooks.NAME (borrowed; NULL when the hook is absent). */
const json_t *harness_compiled_hook(const harness_compiled *c, const char *name);
/* hooks.reply_filter.banned (NULL when absent), hooks.tool_retry.retry_on. */
const json_t *harness_compiled_banned(const harness_compiled *c);
const json_t *harness_compiled_retry_on(const harness_compiled *c);
const char   *harness_compiled_loader(const harness_compiled *c);      /* "load_skill" */
const char   *harness_compiled_loader_arg(const harness_compiled *c);  /* "skill" */
/* Whether some skill has kind "reply". */
int           harness_compiled_has_reply_skill(const harness_compiled *c);

/* harness_load_ex, then the lint every program applies before using a
 * harness: warnings printed as "prog: FILE: PATH: warning: message",
 * errors the same without "warning: "; NULL when there was an error. */
json_t *harness_load_checked(const char *path);
/* One problem of harness_lint or harness_load_problems as
 * "prog: FILE[:LINE][: PATH]: [warning: ]message" on f. */
void    harness_print_problem(FILE *f, const json_t *problem);

#endif
