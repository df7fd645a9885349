/* bank.h — phrasing banks: data files of named template lists, and the
 * {slot} filling that turns a template into text.
 *
 * A bank file is one JSON object whose values are arrays of templates
 * (strings), e.g. data/teacher/replies.json:
 *     { "price": [ "@{nick} it's ¥{price} now (was ¥{list_price})", ... ], ... }
 * Task banks (data/tasks/SPLIT/INTENT.json) have the same shape.  Keys
 * starting with "note" are comments.  A template names its slots in
 * braces; bank_fill fails when a slot has no value, so callers can skip a
 * template that needs a fact they do not have.
 *
 * A template may also hold alternation groups, "[how much|price of] {product}":
 * each group is replaced by one of its '|'-separated choices (possibly
 * empty: "[pls |]"), so one line stands for the product of its groups'
 * sizes.  Groups do not nest; "[[" and "]]" are literal brackets. */
#ifndef HAT_BANK_H
#define HAT_BANK_H

#include <jansson.h>
#include "rng.h"
#include "util.h"

/* Load data file NAME (relative to the data directory) as a bank: every
 * non-"note" value must be a non-empty array of strings.  NULL + message. */
json_t *bank_load(const char *name);
/* Load a bank from an explicit path (for tests and user banks). */
json_t *bank_load_path(const char *path);

/* Template list for key (NULL if absent). */
const json_t *bank_list(const json_t *bank, const char *key);
/* A random template of key, or NULL. */
const char *bank_pick(const json_t *bank, const char *key, rng_t *r);

/* Append tmpl to out with each {slot} replaced by vars[slot] (strings
 * verbatim, integers in decimal, reals in shortest form).  "{{" and "}}"
 * are literal braces.  Returns 0, or -1 when a slot has no value (out is
 * then restored to its old length). */
int bank_fill(sbuf *out, const char *tmpl, const json_t *vars);
/* Number of surface forms of tmpl: the product of its groups' sizes
 * (1 without groups), or 0 when a group is unclosed, nested or the
 * product exceeds BANK_MAX_FORMS. */
#define BANK_MAX_FORMS 1000000
long bank_forms(const char *tmpl);
/* Append form k (0 <= k < bank_forms(tmpl); the first group varies
 * slowest) of tmpl to out, slots untouched.  -1 on a bad template or k. */
int bank_form(sbuf *out, const char *tmpl, long k);
/* Append a random form of tmpl (r is used only when tmpl has groups). */
int bank_choose(sbuf *out, const char *tmpl, rng_t *r);
/* A number as it is written in replies: 199, 89.9 (no trailing zeros). */
void bank_number(sbuf *out, double v);

#endif
