/* hsa_skills.c — the two skill dimensions of HSA.
 *
 * skill-id:      mask skills the task does not need, inject distractor
 *                skills (function "distractor"), rename, rewrite descriptions.
 * skill-content: paraphrase rules, add rules from the vocabulary's bank
 *                (rules.json), mask rules of skills the trajectory never
 *                loads, reorder rules.
 * Masking is conservative: never a skill the trajectory loads or the task's
 * gold needs, always at least one reply skill left, and only with a
 * trajectory (without one nobody knows what the task needs). */
#include "hsa.h"
#include "jsonl.h"
#include "harness.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* Masking is rarer than rewriting: a masked skill is a big change. */
#define MASK_SHARE 0.3
#define MAX_MASKED 3
/* A week's edit adds a rule to some skills: a model trained on skills that
 * never change length reads the last rule's words to choose a tool (e27: one
 * added line saying "returns" sent HSA-SFT's size calls to the order tool). */
#define ADD_SHARE 0.5

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* The name a skill had in the input harness (before renaming). */
static const char *old_name(const hsa_ctx *c, const char *now)
{
    const char *k;
    json_t *v;
    if (!now) return NULL;   /* a skill without a string name (bad inline harness) */
    json_object_foreach(c->skill_map, k, v)
        if (json_is_string(v) && !strcmp(json_string_value(v), now)) return k;
    return now;
}

static int needed(const hsa_ctx *c, const json_t *skill)
{
    if (!c->need) return 1;
    const char *name = old_name(c, str(skill, "name"));
    const char *fn = str(skill, "function");
    return (name && json_object_get(c->need->keep_skills, name)) ||
           (fn && json_object_get(c->need->keep_functions, fn));
}

static int is_reply(const json_t *skill)
{
    const char *k = str(skill, "kind");
    return k && !strcmp(k, "reply");
}

static void mask_skills(hsa_ctx *c, double p)
{
    json_t *skills = json_object_get(c->h, "skills");
    int replies = 0, kept_reply = 0;
    size_t i;
    json_t *s;
    json_array_foreach(skills, i, s) {
        replies += is_reply(s);
        kept_reply |= is_reply(s) && needed(c, s);
    }
    int masked = 0;
    for (i = 0; i < json_array_size(skills) && masked < MAX_MASKED;) {
        s = json_array_get(skills, i);
        int last_reply = is_reply(s) && !kept_reply && replies <= 1;
        if (needed(c, s) || last_reply || !rng_chance(c->r, p * MASK_SHARE)) { i++; continue; }
        hsa_op(c, HSA_SKILL_ID, "mask_skill", "function", json_str(str(s, "function")),
               "name", json_str(str(s, "name")), NULL);
        replies -= is_reply(s);
        json_array_remove(skills, i);
        masked++;
    }
}

static void inject_distractors(hsa_ctx *c, double p)
{
    if (!rng_chance(c->r, p)) return;
    json_t *skills = json_object_get(c->h, "skills");
    int n = 1 + (int)rng_below(c->r, 2);
    for (int k = 0; k < n; k++) {
        json_t *taken = hsa_taken_names(c->h);
        json_t *d = hsa_distractor(c->v, c->r, taken);
        json_decref(taken);
        if (!d) return;
        size_t at = rng_below(c->r, json_array_size(skills) + 1);
        hsa_op(c, HSA_SKILL_ID, "inject", "name", json_str(str(d, "name")),
               "function", json_str("distractor"), "at", json_integer((json_int_t)at), NULL);
        json_array_insert_new(skills, at, d);
    }
}

static void rename_skills(hsa_ctx *c, double p)
{
    /* Names in use, old ones included: a new name never repeats one. */
    json_t *taken = hsa_taken_names(c->h);
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(c->h, "skills"), i, s) {
        if (!rng_chance(c->r, p)) continue;
        const char *fn = str(s, "function"), *from = str(s, "name");
        char *to = fn && from ? hsa_name_skill(c->v, c->r, fn, taken) : NULL;
        if (!to) continue;
        json_object_set_new(taken, to, json_true());
        hsa_op(c, HSA_SKILL_ID, "rename", "function", json_str(fn), "from", json_str(from),
               "to", json_str(to), NULL);
        /* Keyed by the input name; an injected skill has none to map. */
        const char *orig = old_name(c, from);
        json_object_set_new(c->skill_map, orig, json_str(to));
        json_object_set_new(s, "name", json_str(to));
        free(to);
    }
    json_decref(taken);
}

/* Replace o[key] by a rewrite (hsa_rewrite_text) with probability p. */
static void paraphrase_field(hsa_ctx *c, int dim, const char *op, double p, json_t *o,
                             const char *key, const char *section, const char *who_k,
                             const char *who)
{
    const char *from = str(o, key);
    if (!from || !rng_chance(c->r, p)) return;
    char *to = hsa_rewrite_text(c, dim, section, from);
    if (!to) return;
    hsa_op(c, dim, op, who_k, json_str(who), "from", json_str(from),
           "to", json_str(to), NULL);
    json_object_set_new(o, key, json_str(to));
    free(to);
}

void hsa_skill_ids(hsa_ctx *c)
{
    double p = c->o->p[HSA_SKILL_ID];
    if (c->need) mask_skills(c, p);
    rename_skills(c, p);          /* before injecting: distractors are new */
    inject_distractors(c, p);
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(c->h, "skills"), i, s)
        paraphrase_field(c, HSA_SKILL_ID, "describe", p, s, "description", "skill_descriptions",
                         "function", str(s, "function"));
}

static void paraphrase_rules(hsa_ctx *c, json_t *s, double p)
{
    json_t *rules = json_object_get(s, "rules");
    size_t i;
    json_t *r;
    json_array_foreach(rules, i, r) {
        const char *from = json_string_value(r);
        if (!from || !rng_chance(c->r, p)) continue;
        char *to = hsa_rewrite_text(c, HSA_SKILL_CONTENT, "rules", from);
        if (!to) continue;
        hsa_op(c, HSA_SKILL_CONTENT, "paraphrase_rule", "function", json_str(str(s, "function")),
               "skill", json_str(str(s, "name")), "from", json_str(from),
               "to", json_str(to), NULL);
        json_array_set_new(rules, i, json_str(to));
        free(to);
    }
}

/* One rule (two a third of the time) from the bank, at random places, none
 * the skill already has.  Nothing is drawn when the bank is empty, so a
 * vocabulary without rules.json gives the variants it gave before. */
static void add_rules(hsa_ctx *c, json_t *s, double p)
{
    const json_t *bank = hsa_vocab_added_rules(c->v);
    json_t *rules = json_object_get(s, "rules");
    size_t nb = json_array_size(bank);
    if (!nb || !json_is_array(rules) || !rng_chance(c->r, p * ADD_SHARE)) return;
    int n = rng_below(c->r, 3) ? 1 : 2;
    for (int k = 0; k < n; k++) {
        const char *t = json_string_value(json_array_get(bank, rng_below(c->r, nb)));
        size_t i;
        json_t *r;
        int dup = 0;
        json_array_foreach(rules, i, r) dup |= json_is_string(r) && !strcmp(json_string_value(r), t);
        if (dup) continue;
        size_t at = rng_below(c->r, json_array_size(rules) + 1);
        hsa_op(c, HSA_SKILL_CONTENT, "add_rule", "function", json_str(str(s, "function")),
               "skill", json_str(str(s, "name")), "rule", json_str(t),
               "at", json_integer((json_int_t)at), NULL);
        json_array_insert_new(rules, at, json_str(t));
    }
}

static void mask_rules(hsa_ctx *c, json_t *s, double p)
{
    json_t *rules = json_object_get(s, "rules");
    for (size_t i = 0; i < json_array_size(rules) && json_array_size(rules) > 1;) {
        if (!rng_chance(c->r, p * MASK_SHARE)) { i++; continue; }
        hsa_op(c, HSA_SKILL_CONTENT, "mask_rule", "function", json_str(str(s, "function")),
               "skill", json_str(str(s, "name")),
               "rule", json_str(json_string_value(json_array_get(rules, i))), NULL);
        json_array_remove(rules, i);
    }
}

static void reorder_rules(hsa_ctx *c, json_t *s, double p)
{
    json_t *rules = json_object_get(s, "rules");
    size_t n = json_array_size(rules);
    if (n < 2 || !rng_chance(c->r, p)) return;
    size_t *perm = xmalloc(n * sizeof *perm);
    for (size_t i = 0; i < n; i++) perm[i] = i;
    rng_shuffle(c->r, perm, n, sizeof *perm);
    int moved = 0;
    json_t *order = json_array(), *nr = json_array();
    for (size_t i = 0; i < n; i++) {
        moved |= perm[i] != i;
        json_array_append_new(order, json_integer((json_int_t)perm[i]));
        json_array_append(nr, json_array_get(rules, perm[i]));
    }
    free(perm);
    if (!moved) { json_decref(order); json_decref(nr); return; }
    hsa_op(c, HSA_SKILL_CONTENT, "reorder_rules", "function", json_str(str(s, "function")),
           "skill", json_str(str(s, "name")), "order", order, NULL);
    json_object_set_new(s, "rules", nr);
}

void hsa_skill_content(hsa_ctx *c)
{
    double p = c->o->p[HSA_SKILL_CONTENT];
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(c->h, "skills"), i, s) {
        paraphrase_rules(c, s, p);
        add_rules(c, s, p);
        /* Only skills whose text never shows in the trajectory. */
        if (c->need && !needed(c, s)) mask_rules(c, s, p);
        reorder_rules(c, s, p);
    }
}
