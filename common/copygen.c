/* copygen.c — copy and look-up pre-training records (copygen.h).
 *
 * The surface (question and answer templates, tool and argument names,
 * list headers) is data/copy/copy.json; names come from the world's brand,
 * adjective and item lists plus made-up brands of random syllables, so the
 * same name rarely appears twice in a data set and a model can only answer
 * by finding it in the context. */
#include "copygen.h"
#include "harness.h"
#include "rng.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct copy_gen {
    json_t *copy;        /* data/copy/copy.json */
    json_t *brands;      /* every category's brands */
    json_t *adjectives;
    json_t *nouns;
    json_t *zh_brands;   /* the Chinese brands and item names, for names */
    json_t *zh_nouns;    /* written as the world writes its Chinese ones */
    json_t *nicks;       /* data/world/nicknames.json */
};

/* Products shown in one lookup list. */
enum { LIST_MIN = 3, LIST_MAX = 7 };

static json_t *load(const char *dir, const char *rel, char **err)
{
    char *p = dir ? xasprintf("%s/%s", dir, rel) : hat_data_path(rel);
    if (!p) { *err = xasprintf("data file %s not found", rel); return NULL; }
    json_error_t e;
    json_t *v = json_load_file(p, 0, &e);
    if (!v) *err = xasprintf("%s:%d: %s", p, e.line, e.text);
    free(p);
    return v;
}

/* A non-empty array of strings under key, or an error naming it. */
static int check_strings(const json_t *o, const char *key, char **err)
{
    json_t *a = json_object_get(o, key);
    size_t i;
    json_t *s;
    if (!json_is_array(a) || !json_array_size(a)) goto bad;
    json_array_foreach(a, i, s) if (!json_is_string(s)) goto bad;
    return 0;
bad:
    *err = xasprintf("copy/copy.json: \"%s\" must be a non-empty array of strings", key);
    return -1;
}

static int check_copy(const json_t *c, char **err)
{
    static const char *keys[] = { "syllables", "codes", "list_header", "tools", "tool_args",
                                  "repeat_ask", "repeat_answer", "tails" };
    static const char *order_keys[] = { "ids", "ask", "answer", "tools", "tool_args", "statuses" };
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (check_strings(c, keys[i], err)) return -1;
    const json_t *o = json_object_get(c, "orders");
    for (size_t i = 0; i < sizeof order_keys / sizeof *order_keys; i++)
        if (!json_is_object(o) || check_strings(o, order_keys[i], err)) {
            free(*err);
            *err = xasprintf("copy/copy.json: \"orders\" needs ids, ask, answer, tools, tool_args, statuses"
                             " (non-empty arrays of strings)");
            return -1;
        }
    static const char *pick_keys[] = { "headers", "tools", "args", "words", "answers" };
    const json_t *pk = json_object_get(c, "pick"), *t;
    size_t i;
    for (size_t k = 0; k < sizeof pick_keys / sizeof *pick_keys; k++)
        if (!json_is_object(pk) || check_strings(pk, pick_keys[k], err)) goto bad_pick;
    /* a record lists up to LIST_MAX + 1 topics, each once */
    if (json_array_size(json_object_get(pk, "topics")) < LIST_MAX + 1) goto bad_pick;
    json_array_foreach(json_object_get(pk, "topics"), i, t)
        if (check_strings(t, "about", err) || check_strings(t, "ask", err)) goto bad_pick;
    json_t *attrs = json_object_get(c, "attributes"), *a;
    if (!json_is_array(attrs) || !json_array_size(attrs)) {
        *err = xasprintf("copy/copy.json: \"attributes\" must be a non-empty array");
        return -1;
    }
    json_array_foreach(attrs, i, a) {
        if (!json_is_string(json_object_get(a, "key")) || !json_is_string(json_object_get(a, "show")) ||
            !json_is_string(json_object_get(a, "kind")) ||
            check_strings(a, "ask", err) || check_strings(a, "answer", err)) {
            if (!*err) *err = xasprintf("copy/copy.json: attribute %zu needs key, show, kind, ask, answer", i);
            return -1;
        }
    }
    return 0;
bad_pick:
    free(*err);
    *err = xasprintf("copy/copy.json: \"pick\" needs headers, tools, args, words, answers (non-empty arrays"
                     " of strings) and at least %d topics, each with about and ask", LIST_MAX + 1);
    return -1;
}

copy_gen *copy_load(const char *dir, char **err)
{
    *err = NULL;
    copy_gen *g = xcalloc(1, sizeof *g);
    json_t *cat = NULL;
    if (!(g->copy = load(dir, "copy/copy.json", err)) || check_copy(g->copy, err)) goto fail;
    if (!(cat = load(dir, "world/categories.json", err))) goto fail;
    if (!(g->nicks = load(dir, "world/nicknames.json", err))) goto fail;
    g->brands = json_array();
    g->adjectives = json_array();
    g->nouns = json_array();
    g->zh_brands = json_array();
    g->zh_nouns = json_array();
    const char *k;
    json_t *c;
    json_object_foreach(cat, k, c) {
        if (!json_is_object(c)) continue;
        json_array_extend(g->brands, json_object_get(c, "brands"));
        json_array_extend(g->adjectives, json_object_get(c, "adjectives"));
        size_t i;
        json_t *it;
        json_array_foreach(json_object_get(c, "items"), i, it) {
            if (json_is_string(json_object_get(it, "noun"))) json_array_append(g->nouns, json_object_get(it, "noun"));
            if (json_is_string(json_object_get(it, "zh"))) json_array_append(g->zh_nouns, json_object_get(it, "zh"));
        }
        json_array_foreach(json_object_get(c, "zh_brands"), i, it)
            if (json_is_string(it)) json_array_append(g->zh_brands, it);
    }
    json_decref(cat);
    cat = NULL;
    if (!json_array_size(g->brands) || !json_array_size(g->adjectives) || !json_array_size(g->nouns)) {
        *err = xasprintf("world/categories.json: no brands, adjectives or item nouns");
        goto fail;
    }
    if (check_strings(g->nicks, "prefixes", err) || check_strings(g->nicks, "suffixes", err) ||
        check_strings(g->nicks, "whole", err)) {
        free(*err);
        *err = xasprintf("world/nicknames.json: needs prefixes, suffixes and whole (arrays of strings)");
        goto fail;
    }
    return g;
fail:
    json_decref(cat);
    copy_free(g);
    return NULL;
}

void copy_free(copy_gen *g)
{
    if (!g) return;
    json_decref(g->copy);
    json_decref(g->brands);
    json_decref(g->adjectives);
    json_decref(g->nouns);
    json_decref(g->zh_brands);
    json_decref(g->zh_nouns);
    json_decref(g->nicks);
    free(g);
}

static const char *pick(rng_t *r, const json_t *a)
{
    return json_string_value(json_array_get(a, rng_below(r, json_array_size(a))));
}

static const char *pick_key(rng_t *r, const json_t *o, const char *key)
{
    return pick(r, json_object_get(o, key));
}

/* A made-up word of 2-3 syllables, capitalised when cap. */
static void made_up(rng_t *r, const copy_gen *g, sbuf *b, int cap)
{
    int n = 2 + (int)rng_below(r, 2);
    size_t at = b->len;
    for (int i = 0; i < n; i++) sbuf_puts(b, pick_key(r, g->copy, "syllables"));
    if (cap && b->s[at] >= 'a' && b->s[at] <= 'z') b->s[at] -= 'a' - 'A';
}

/* Brand (real or made up), maybe an adjective, a noun, maybe a model
 * number; as often as the world names a product in Chinese (a brand and an
 * item, no space), that.  Some names say their first word twice ("Honey
 * Hollow Honey Nut Mix" is a world's name): a copy that only looks at the
 * last token loops there, so the records must show where such a name goes
 * on. */
static char *product_name(rng_t *r, const copy_gen *g)
{
    sbuf b;
    sbuf_init(&b);
    if (json_array_size(g->zh_brands) && json_array_size(g->zh_nouns) && rng_chance(r, 0.12)) {
        sbuf_printf(&b, "%s%s", pick(r, g->zh_brands), pick(r, g->zh_nouns));
        return sbuf_detach(&b);
    }
    if (rng_chance(r, 0.5)) made_up(r, g, &b, 1);
    else sbuf_puts(&b, pick(r, g->brands));
    if (rng_chance(r, 0.6)) sbuf_printf(&b, " %s", pick(r, g->adjectives));
    if (rng_chance(r, 0.15)) sbuf_printf(&b, " %.*s", (int)strcspn(b.s, " "), b.s);
    sbuf_printf(&b, " %s", pick(r, g->nouns));
    if (rng_chance(r, 0.3)) sbuf_printf(&b, " %c%u", 'A' + (int)rng_below(r, 26), (unsigned)(1 + rng_below(r, 99)));
    return sbuf_detach(&b);
}

static char *nickname(rng_t *r, const copy_gen *g)
{
    sbuf b;
    sbuf_init(&b);
    switch (rng_below(r, 4)) {
    case 0: sbuf_puts(&b, pick_key(r, g->nicks, "whole")); break;
    case 1: made_up(r, g, &b, 0); break;
    default: sbuf_puts(&b, pick_key(r, g->nicks, "prefixes")); sbuf_puts(&b, pick_key(r, g->nicks, "suffixes")); break;
    }
    if (rng_chance(r, 0.6)) sbuf_printf(&b, "%u", (unsigned)rng_below(r, 1000));
    return sbuf_detach(&b);
}

/* A value for an attribute kind, as text. */
static char *value(rng_t *r, const copy_gen *g, const char *kind)
{
    if (!strcmp(kind, "price"))
        return rng_chance(r, 0.5) ? xasprintf("%u.9", (unsigned)(9 + rng_below(r, 990)))
                                  : xasprintf("%u", (unsigned)(9 + rng_below(r, 990)));
    if (!strcmp(kind, "count")) return xasprintf("%u", (unsigned)(1 + rng_below(r, 500)));
    if (!strcmp(kind, "days")) return xasprintf("%u", (unsigned)(1 + rng_below(r, 14)));
    return xasprintf("%s%u", pick_key(r, g->copy, "codes"), (unsigned)(10 + rng_below(r, 90)));
}

/* An id written in one of the order formats: # a digit, @ a capital. */
static char *order_id(rng_t *r, const json_t *orders)
{
    sbuf b;
    sbuf_init(&b);
    for (const char *p = pick_key(r, orders, "ids"); *p; p++)
        sbuf_putc(&b, *p == '#' ? (char)('0' + rng_below(r, 10)) : *p == '@' ? (char)('A' + rng_below(r, 26)) : *p);
    return sbuf_detach(&b);
}

/* q, maybe with 1 to 3 tails after it (freed; the result is malloc'd). */
static char *with_tails(rng_t *r, const copy_gen *g, char *q)
{
    if (!rng_chance(r, 0.5)) return q;
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, q);
    free(q);
    for (int n = 1 + (int)rng_below(r, 3); n > 0; n--) sbuf_printf(&b, " %s", pick_key(r, g->copy, "tails"));
    return sbuf_detach(&b);
}

/* tmpl with {name}, {nick}, {value} replaced. */
static char *fill(const char *tmpl, const char *name, const char *nick, const char *val)
{
    sbuf b;
    sbuf_init(&b);
    for (const char *p = tmpl; *p;) {
        const char *with = NULL;
        size_t skip = 0;
        if (!strncmp(p, "{name}", 6)) with = name, skip = 6;
        else if (!strncmp(p, "{nick}", 6)) with = nick, skip = 6;
        else if (!strncmp(p, "{value}", 7)) with = val, skip = 7;
        if (with) { sbuf_puts(&b, with); p += skip; }
        else sbuf_putc(&b, *p++);
    }
    return sbuf_detach(&b);
}

/* One listed product: its name and one value per attribute. */
typedef struct {
    char *name;
    char *val[8];
} product;

static void product_draw(rng_t *r, const copy_gen *g, product *p, size_t nattr)
{
    p->name = product_name(r, g);
    for (size_t a = 0; a < nattr; a++)
        p->val[a] = value(r, g, json_string_value(json_object_get(
                                    json_array_get(json_object_get(g->copy, "attributes"), a), "kind")));
}

static void product_clear(product *p, size_t nattr)
{
    free(p->name);
    for (size_t a = 0; a < nattr; a++) free(p->val[a]);
}

static json_t *msg(const char *role, char *content)
{
    json_t *m = json_pack("{s:s, s:s}", "role", role, "content", content);
    free(content);
    return m;
}

/* A viewer's question about attribute a of p and the answer copying it. */
static void ask(rng_t *r, const copy_gen *g, const json_t *attr, const product *p, size_t a, char **q, char **ans,
                const char *nick)
{
    *q = with_tails(r, g, fill(pick_key(r, attr, "ask"), p->name, nick, p->val[a]));
    *ans = fill(pick_key(r, attr, "answer"), p->name, nick, p->val[a]);
}

static void add_lookup(rng_t *r, const copy_gen *g, json_t *msgs, int turns, size_t nattr)
{
    json_t *attrs = json_object_get(g->copy, "attributes");
    product list[LIST_MAX];
    size_t n = LIST_MIN + rng_below(r, LIST_MAX - LIST_MIN + 1);
    sbuf ctx;
    sbuf_init(&ctx);
    sbuf_printf(&ctx, "%s\n", pick_key(r, g->copy, "list_header"));
    for (size_t i = 0; i < n; i++) {
        product_draw(r, g, &list[i], nattr);
        sbuf_printf(&ctx, "- %s:", list[i].name);
        for (size_t a = 0; a < nattr; a++) {
            char *s = fill(json_string_value(json_object_get(json_array_get(attrs, a), "show")), "", "", list[i].val[a]);
            sbuf_printf(&ctx, "%s %s", a ? "," : "", s);
            free(s);
        }
        sbuf_putc(&ctx, '\n');
    }
    for (int t = 0; t < turns; t++) {
        size_t i = rng_below(r, n), a = rng_below(r, nattr);
        char *nick = nickname(r, g), *q, *ans;
        ask(r, g, json_array_get(attrs, a), &list[i], a, &q, &ans, nick);
        if (t == 0) { sbuf_printf(&ctx, "\n%s: %s", nick, q); free(q); q = sbuf_detach(&ctx); }
        else { char *s = xasprintf("%s: %s", nick, q); free(q); q = s; }
        json_array_append_new(msgs, msg("user", q));
        json_array_append_new(msgs, msg("assistant", ans));
        free(nick);
    }
    sbuf_free(&ctx);
    for (size_t i = 0; i < n; i++) product_clear(&list[i], nattr);
}

/* One call turn: nick's question q, a call of tool with {arg: val}, the
 * tool's {"ok":true,"data":data} (data's reference taken) and the answer
 * ans (q and ans freed). */
static void add_call_turn(json_t *msgs, const char *nick, char *q, const char *tool, const char *arg,
                          const char *val, json_t *data, char *ans)
{
    json_array_append_new(msgs, msg("user", xasprintf("%s: %s", nick, q)));
    free(q);
    json_array_append_new(msgs, json_pack("{s:s, s:s, s:[{s:s, s:{s:s, s:{s:s}}}]}", "role", "assistant",
                                          "content", "", "tool_calls", "type", "function", "function", "name",
                                          tool, "arguments", arg, val));
    json_t *res = json_pack("{s:b, s:o}", "ok", 1, "data", data);
    char *text = json_dumps(res, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(res);
    json_array_append_new(msgs, json_pack("{s:s, s:s, s:s}", "role", "tool", "name", tool, "content", text));
    free(text);
    json_array_append_new(msgs, msg("assistant", ans));
}

/* A question about a product (or, in 3 of 10 turns, an order): the call
 * copies its name (or id) out of the question, the answer copies the
 * asked field out of the tool's record.  One tool and argument name for
 * products and one for orders per record. */
static void add_call(rng_t *r, const copy_gen *g, json_t *msgs, int turns, size_t nattr)
{
    json_t *attrs = json_object_get(g->copy, "attributes"), *orders = json_object_get(g->copy, "orders");
    const char *tool = pick_key(r, g->copy, "tools"), *arg = pick_key(r, g->copy, "tool_args");
    const char *otool = pick_key(r, orders, "tools"), *oarg = pick_key(r, orders, "tool_args");
    for (int t = 0; t < turns; t++) {
        char *nick = nickname(r, g), *q, *ans;
        if (rng_chance(r, 0.3)) {
            char *id = order_id(r, orders);
            const char *st = pick_key(r, orders, "statuses");
            q = with_tails(r, g, fill(pick_key(r, orders, "ask"), id, nick, st));
            ans = fill(pick_key(r, orders, "answer"), id, nick, st);
            add_call_turn(msgs, nick, q, otool, oarg, id,
                          json_pack("{s:s, s:s, s:i}", "order_id", id, "status", st, "days",
                                    (int)(1 + rng_below(r, 14))), ans);
            free(id);
            free(nick);
            continue;
        }
        product p;
        product_draw(r, g, &p, nattr);
        size_t a = rng_below(r, nattr);
        ask(r, g, json_array_get(attrs, a), &p, a, &q, &ans, nick);
        json_t *data = json_pack("{s:s, s:s}", "id", "", "name", p.name);
        char *id = xasprintf("P%03u", (unsigned)rng_below(r, 1000));
        json_object_set_new(data, "id", json_string(id));
        free(id);
        for (size_t k = 0; k < nattr; k++) {
            const json_t *at = json_array_get(attrs, k);
            const char *kind = json_string_value(json_object_get(at, "kind")), *key = json_string_value(json_object_get(at, "key"));
            json_object_set_new(data, key, strcmp(kind, "code") ? json_real(atof(p.val[k])) : json_string(p.val[k]));
            if (strcmp(kind, "code") && !strchr(p.val[k], '.')) json_object_set_new(data, key, json_integer(atol(p.val[k])));
        }
        add_call_turn(msgs, nick, q, tool, arg, p.name, data, ans);
        free(nick);
        product_clear(&p, nattr);
    }
}

/* A list of 3 to 8 names, nicknames, values and codes, said back in order:
 * every answer token but the first is a pure copy (what an induction head
 * does), the densest copy signal of the three kinds. */
static void add_repeat(rng_t *r, const copy_gen *g, json_t *msgs, int turns)
{
    json_t *attrs = json_object_get(g->copy, "attributes");
    for (int t = 0; t < turns; t++) {
        sbuf list;
        sbuf_init(&list);
        size_t n = 3 + rng_below(r, 6);
        for (size_t i = 0; i < n; i++) {
            char *w;
            switch (rng_below(r, 3)) {
            case 0: w = product_name(r, g); break;
            case 1: w = nickname(r, g); break;
            default:
                w = value(r, g, json_string_value(json_object_get(
                                    json_array_get(attrs, rng_below(r, json_array_size(attrs))), "kind")));
            }
            sbuf_printf(&list, "%s%s", i ? ", " : "", w);
            free(w);
        }
        json_array_append_new(msgs, msg("user", fill(pick_key(r, g->copy, "repeat_ask"), list.s, "", "")));
        json_array_append_new(msgs, msg("assistant", fill(pick_key(r, g->copy, "repeat_answer"), list.s, "", "")));
        sbuf_free(&list);
    }
}

/* A routine's name: a made-up word and another (or one of the "words"),
 * in snake_case, kebab-case or camelCase, as HSA names skills. */
static char *routine_name(rng_t *r, const copy_gen *g)
{
    sbuf b;
    sbuf_init(&b);
    int style = (int)rng_below(r, 3);
    made_up(r, g, &b, 0);
    if (style < 2) sbuf_putc(&b, style ? '-' : '_');
    size_t at = b.len;
    if (rng_chance(r, 0.5)) sbuf_puts(&b, pick_key(r, json_object_get(g->copy, "pick"), "words"));
    else made_up(r, g, &b, 0);
    if (style == 2 && b.s[at] >= 'a' && b.s[at] <= 'z') b.s[at] -= 'a' - 'A';
    return sbuf_detach(&b);
}

/* The question of an echoed turn: the routine's line as a viewer types
 * it, in lower case and without its full stop. */
static char *echo_question(const char *about)
{
    char *q = xstrdup(about);
    size_t n = strlen(q);
    if (n && q[n - 1] == '.') q[--n] = 0;
    for (char *c = q; *c; c++) if (*c >= 'A' && *c <= 'Z') *c += 'a' - 'A';
    return q;
}

/* A system message lists 3 to LIST_MAX + 1 routines (a fresh name and a
 * line on what it is for, each topic once); each turn a viewer asks about
 * one listed topic and the assistant opens the routine whose line fits,
 * copying its name: the name is found by what it is for, as an agent
 * finds a renamed skill by its description.  The tool answers with the
 * routine's line and the reply addresses the viewer.  With probability
 * echo a question is the line's own words (echo_question): matching a
 * line by the words it shares with the question is the circuit the
 * paraphrases are then learnt on (small-notes e24, E7). */
static void add_pick(rng_t *r, const copy_gen *g, json_t *msgs, int turns, double echo, const char *line)
{
    const json_t *pk = json_object_get(g->copy, "pick"), *topics = json_object_get(pk, "topics");
    size_t nt = json_array_size(topics), n = 3 + rng_below(r, LIST_MAX - 1);
    const char *tool = pick_key(r, pk, "tools"), *arg = pick_key(r, pk, "args");
    size_t idx[LIST_MAX + 1];
    char *name[LIST_MAX + 1];
    const char *about[LIST_MAX + 1];
    /* n distinct topics: a partial Fisher-Yates shuffle of 0..nt-1 */
    size_t *perm = xmalloc(nt * sizeof *perm);
    for (size_t i = 0; i < nt; i++) perm[i] = i;
    for (size_t i = 0; i < n; i++) {
        size_t j = i + rng_below(r, nt - i), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
        idx[i] = perm[i];
    }
    free(perm);
    sbuf sys;
    sbuf_init(&sys);
    char *head = fill(pick_key(r, pk, "headers"), tool, "", "");    /* a header's {name} is the tool */
    sbuf_puts(&sys, head);
    free(head);
    for (size_t i = 0; i < n; i++) {
        name[i] = routine_name(r, g);
        about[i] = pick_key(r, json_array_get(topics, idx[i]), "about");
        char *l = harness_skill_line(line, name[i], about[i]);
        sbuf_printf(&sys, "\n%s", l);
        free(l);
    }
    json_array_append_new(msgs, msg("system", sbuf_detach(&sys)));
    for (int t = 0; t < turns; t++) {
        size_t i = rng_below(r, n);
        char *nick = nickname(r, g), *prod = product_name(r, g), *id = order_id(r, json_object_get(g->copy, "orders"));
        /* without echo no draw is made for it: the same bytes as before */
        char *q = echo > 0 && rng_uniform(r) < echo
                      ? echo_question(about[i])
                      : with_tails(r, g, fill(pick_key(r, json_array_get(topics, idx[i]), "ask"), prod, nick, id));
        char *ans = fill(pick_key(r, pk, "answers"), "", nick, "");
        add_call_turn(msgs, nick, q, tool, arg, name[i], json_pack("{s:s, s:s}", "name", name[i], "about", about[i]),
                      ans);
        free(prod);
        free(id);
        free(nick);
    }
    for (size_t i = 0; i < n; i++) free(name[i]);
}

json_t *copy_make(copy_gen *g, uint64_t seed, long index, const copy_opts *o)
{
    int turns = o->turns;
    rng_t r;
    rng_derive(&r, seed, (uint64_t)index);
    size_t nattr = json_array_size(json_object_get(g->copy, "attributes"));
    if (nattr > 8) nattr = 8;
    json_t *msgs = json_array();
    /* without --pick no draw is made for it: the same bytes as before */
    int picked = o->pick > 0 && rng_uniform(&r) < o->pick;
    double u = picked ? 0 : rng_uniform(&r);
    const char *kind = picked ? "pick" : u < 0.35 ? "lookup" : u < 0.7 ? "call" : "repeat";
    if (picked) add_pick(&r, g, msgs, turns, o->echo, o->line);
    else if (!strcmp(kind, "lookup")) add_lookup(&r, g, msgs, turns, nattr);
    else if (!strcmp(kind, "call")) add_call(&r, g, msgs, turns, nattr);
    else add_repeat(&r, g, msgs, turns);
    char *id = xasprintf("copy-%06ld", index);
    json_t *rec = json_pack("{s:s, s:s, s:o}", "id", id, "kind", kind, "messages", msgs);
    free(id);
    return rec;
}

json_t *copy_make_ids(const int *ids, size_t nids, int min_len, int max_len, uint64_t seed,
                      long index)
{
    rng_t r;
    rng_derive(&r, seed, (uint64_t)index);
    int len = min_len + (int)rng_below(&r, (uint64_t)(max_len - min_len + 1));
    json_t *a = json_array(), *m = json_array();
    int *run = xmalloc((size_t)len * sizeof *run);
    for (int i = 0; i < len; i++) run[i] = ids[rng_below(&r, nids)];
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < len; i++) {
            json_array_append_new(a, json_integer(run[i]));
            json_array_append_new(m, json_integer(pass == 1 && i > 0));
        }
    free(run);
    char *id = xasprintf("copy-%06ld", index);
    json_t *rec = json_pack("{s:s, s:s, s:o, s:o}", "id", id, "kind", "induction", "ids", a, "mask", m);
    free(id);
    return rec;
}

/* Place a run of len ids at a random start in [lo, hi] whose ids are all
 * free; -1 when 64 tries find none (the record then has fewer runs). */
static int place_run(rng_t *r, const unsigned char *used, int lo, int hi, int len)
{
    for (int t = 0; t < 64 && lo <= hi; t++) {
        int a = lo + (int)rng_below(r, (uint64_t)(hi - lo + 1)), i = 0;
        while (i < len && !used[a + i]) i++;
        if (i == len) return a;
    }
    return -1;
}

json_t *copy_make_haystack(const int *ids, size_t nids, int len, int pairs, int min_len,
                           int max_len, uint64_t seed, long index)
{
    rng_t r;
    rng_derive(&r, seed, (uint64_t)index);
    int *seq = xmalloc((size_t)len * sizeof *seq);
    unsigned char *used = xcalloc((size_t)len, 1), *mask = xcalloc((size_t)len, 1);
    for (int i = 0; i < len; i++) seq[i] = ids[rng_below(&r, nids)];
    for (int p = 0; p < pairs; p++) {
        int l = min_len + (int)rng_below(&r, (uint64_t)(max_len - min_len + 1));
        int a = place_run(&r, used, 0, len - 2 * l, l);
        if (a < 0) continue;
        for (int i = 0; i < l; i++) used[a + i] = 1;
        int b = place_run(&r, used, a + l, len - l, l);
        if (b < 0) { for (int i = 0; i < l; i++) used[a + i] = 0; continue; }
        for (int i = 0; i < l; i++) {
            seq[b + i] = seq[a + i];
            used[b + i] = 1;
            mask[b + i] = i > 0;
        }
    }
    json_t *a = json_array(), *m = json_array();
    for (int i = 0; i < len; i++) {
        json_array_append_new(a, json_integer(seq[i]));
        json_array_append_new(m, json_integer(mask[i]));
    }
    free(seq); free(used); free(mask);
    char *id = xasprintf("copy-%06ld", index);
    json_t *rec = json_pack("{s:s, s:s, s:o, s:o}", "id", id, "kind", "haystack", "ids", a, "mask", m);
    free(id);
    return rec;
}
