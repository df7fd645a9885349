/* harness_diff.c — what changed between two harnesses, by function.
 *
 * Elements are matched by their stable meaning, not their surface form:
 * skills and tools by function, tool parameters by x-function, prompt
 * blocks by id, hooks by name.  So a renamed skill is reported as
 * "skill_renamed" for its function, not as one skill removed and another
 * added.  Each change is {"change": KIND, "at": WHERE, "from": A, "to": B}
 * (from/to omitted where they do not apply); man 1 harness-diff lists the
 * kinds.  Whatever the specific comparisons miss still shows as "other", so
 * an empty result always means json_equal(a, b). */
#include "harness.h"
#include "jsonl.h"
#include "util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static void change(json_t *out, const char *kind, const char *at, const json_t *from,
                   const json_t *to)
{
    json_t *c = json_object();
    json_object_set_new(c, "change", json_string(kind));
    json_object_set_new(c, "at", json_string(at ? at : ""));
    if (from) json_object_set(c, "from", (json_t *)from);
    if (to) json_object_set(c, "to", (json_t *)to);
    json_array_append_new(out, c);
}

/* json_equal, but two absent values are equal too. */
static int same(const json_t *a, const json_t *b) { return a == b || json_equal(a, b); }

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* A field that differs → one change. */
static void field(json_t *out, const char *kind, const char *at, const json_t *a, const json_t *b,
                  const char *key)
{
    json_t *x = json_object_get(a, key), *y = json_object_get(b, key);
    if (!json_equal(x, y) && (x || y)) change(out, kind, at, x ? x : json_null(), y ? y : json_null());
}

/* Word-set overlap of two texts (Jaccard over lower-cased ASCII words and
 * single non-ASCII bytes), to pair a rewritten rule with its original. */
static double overlap(const char *x, const char *y)
{
    unsigned char hx[256] = { 0 }, hy[256] = { 0 };   /* hashed word sets */
    const char *s[2] = { x, y };
    unsigned char *h[2] = { hx, hy };
    for (int k = 0; k < 2; k++)
        for (const unsigned char *p = (const unsigned char *)s[k]; *p;) {
            unsigned hash = 5381;
            int n = 0;
            while (*p && (isalnum(*p) || *p >= 0x80)) { hash = hash * 33 + (unsigned)tolower(*p++); n++; }
            if (n) h[k][hash & 255] = 1;
            else p++;
        }
    int both = 0, any = 0;
    for (int i = 0; i < 256; i++) { both += hx[i] && hy[i]; any += hx[i] || hy[i]; }
    return any ? (double)both / any : 1.0;
}

/* Ordered lists of strings (rules, items): removed/added/changed/reordered.
 * Identical texts pair first, then each remaining new text with the most
 * similar remaining old one (a rewrite), so a list that was both reordered
 * and reworded reads as rewrites plus a reordering, not as shifted pairs. */
static void diff_list(json_t *out, const char *what, const char *at, const json_t *a,
                      const json_t *b)
{
    size_t na = json_array_size(a), nb = json_array_size(b);
    size_t *pa = xmalloc((nb + 1) * sizeof *pa);   /* pa[i]: index in a of b[i], or -1 */
    char *ua = xcalloc(na + 1, 1);
    for (size_t i = 0; i < nb; i++) {
        pa[i] = (size_t)-1;
        for (size_t j = 0; j < na; j++)
            if (!ua[j] && json_equal(json_array_get(a, j), json_array_get(b, i))) {
                ua[j] = 1;
                pa[i] = j;
                break;
            }
    }
    char kind[64];
    for (size_t i = 0; i < nb; i++) {
        if (pa[i] != (size_t)-1) continue;
        double best = 0.2;                         /* below this: added, not rewritten */
        size_t bj = (size_t)-1;
        for (size_t j = 0; j < na; j++) {
            if (ua[j]) continue;
            double o = overlap(json_string_value(json_array_get(a, j)) ? json_string_value(json_array_get(a, j)) : "",
                               json_string_value(json_array_get(b, i)) ? json_string_value(json_array_get(b, i)) : "");
            if (o > best) { best = o; bj = j; }
        }
        if (bj == (size_t)-1) continue;
        ua[bj] = 1;
        pa[i] = bj;
        snprintf(kind, sizeof kind, "%s_changed", what);
        change(out, kind, at, json_array_get(a, bj), json_array_get(b, i));
    }
    /* Leftovers pair in order (a text rewritten beyond recognition in
     * place); what is still unpaired was removed or added. */
    for (size_t i = 0, j = 0; i < nb; i++) {
        if (pa[i] != (size_t)-1) continue;
        while (j < na && ua[j]) j++;
        if (j == na) break;
        ua[j] = 1;
        pa[i] = j;
        snprintf(kind, sizeof kind, "%s_changed", what);
        change(out, kind, at, json_array_get(a, j), json_array_get(b, i));
    }
    for (size_t j = 0; j < na; j++)
        if (!ua[j]) { snprintf(kind, sizeof kind, "%s_removed", what); change(out, kind, at, json_array_get(a, j), NULL); }
    for (size_t i = 0; i < nb; i++)
        if (pa[i] == (size_t)-1) { snprintf(kind, sizeof kind, "%s_added", what); change(out, kind, at, NULL, json_array_get(b, i)); }
    /* Reordered: the surviving pairs are not in increasing order of a. */
    size_t last = 0;
    int first = 1, reordered = 0;
    for (size_t i = 0; i < nb; i++) {
        if (pa[i] == (size_t)-1) continue;
        if (!first && pa[i] < last) reordered = 1;
        last = pa[i];
        first = 0;
    }
    if (reordered) {
        snprintf(kind, sizeof kind, "%ss_reordered", what);
        change(out, kind, at, a, b);
    }
    free(pa);
    free(ua);
}

/* Match elements of a to elements of b by key (then by key + name, first). */
static size_t *match(const json_t *a, const json_t *b, const char *key, const char *name)
{
    size_t na = json_array_size(a), nb = json_array_size(b);
    size_t *m = xmalloc((nb + 1) * sizeof *m);   /* m[i] = index in a, or (size_t)-1 */
    char *used = xcalloc(na + 1, 1);
    for (size_t pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < nb; i++) {
            if (pass == 0) m[i] = (size_t)-1;
            if (m[i] != (size_t)-1) continue;
            const json_t *y = json_array_get(b, i);
            for (size_t j = 0; j < na; j++) {
                const json_t *x = json_array_get(a, j);
                if (used[j] || strcmp(str(x, key), str(y, key))) continue;
                if (pass == 0 && name && strcmp(str(x, name), str(y, name))) continue;
                m[i] = j;
                used[j] = 1;
                break;
            }
        }
    free(used);
    return m;
}

static void removed_added(json_t *out, const char *what, const json_t *a, const json_t *b,
                          const size_t *m, const char *key, const char *show)
{
    size_t na = json_array_size(a), nb = json_array_size(b);
    char kind[64];
    for (size_t j = 0; j < na; j++) {
        int found = 0;
        for (size_t i = 0; i < nb; i++) found |= m[i] == j;
        snprintf(kind, sizeof kind, "%s_removed", what);
        if (!found) change(out, kind, str(json_array_get(a, j), key),
                           json_object_get(json_array_get(a, j), show), NULL);
    }
    snprintf(kind, sizeof kind, "%s_added", what);
    for (size_t i = 0; i < nb; i++)
        if (m[i] == (size_t)-1)
            change(out, kind, str(json_array_get(b, i), key), NULL,
                   json_object_get(json_array_get(b, i), show));
}

/* Matched elements in a different relative order. */
static void reordered(json_t *out, const char *kind, const json_t *a, const json_t *b,
                      const size_t *m, const char *key)
{
    size_t nb = json_array_size(b), last = 0;
    int first = 1, moved = 0;
    for (size_t i = 0; i < nb; i++) {
        if (m[i] == (size_t)-1) continue;
        if (!first && m[i] < last) moved = 1;
        last = m[i];
        first = 0;
    }
    if (!moved) return;
    json_t *from = json_array(), *to = json_array();
    size_t j;
    json_t *v;
    json_array_foreach(a, j, v) json_array_append_new(from, json_string(str(v, key)));
    json_array_foreach(b, j, v) json_array_append_new(to, json_string(str(v, key)));
    change(out, kind, "", from, to);
    json_decref(from);
    json_decref(to);
}

/* ---- skills ----------------------------------------------------------- */

static void diff_skills(json_t *out, const json_t *a, const json_t *b)
{
    size_t *m = match(a, b, "function", "name");
    removed_added(out, "skill", a, b, m, "function", "name");
    reordered(out, "skills_reordered", a, b, m, "function");
    for (size_t i = 0; i < json_array_size(b); i++) {
        if (m[i] == (size_t)-1) continue;
        const json_t *x = json_array_get(a, m[i]), *y = json_array_get(b, i);
        const char *at = str(y, "function");
        field(out, "skill_renamed", at, x, y, "name");
        field(out, "skill_description", at, x, y, "description");
        field(out, "skill_kind", at, x, y, "kind");
        diff_list(out, "rule", at, json_object_get(x, "rules"), json_object_get(y, "rules"));
    }
    free(m);
}

/* ---- tools ------------------------------------------------------------ */

/* Properties as an array of {name, xf, schema} for matching by x-function. */
static json_t *props_list(const json_t *tool)
{
    json_t *l = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(json_object_get(tool, "parameters"), "properties"), k, v) {
        json_t *x = json_object_get(v, "x-function");
        json_array_append_new(l, json_pack("{s:s,s:s,s:O}", "name", k, "xf",
                                           json_is_string(x) ? json_string_value(x) : k,
                                           "schema", v));
    }
    return l;
}

/* Parameters minus properties, with required names mapped to x-functions. */
static json_t *schema_shape(const json_t *tool)
{
    json_t *p = json_object_get(tool, "parameters");
    json_t *s = json_is_object(p) ? json_deep_copy(p) : json_object();
    json_t *props = json_object_get(s, "properties");
    json_t *req = json_object_get(s, "required");
    size_t i;
    json_t *r;
    json_array_foreach(req, i, r) {
        json_t *x = json_object_get(json_object_get(props, json_string_value(r) ? json_string_value(r) : ""),
                                    "x-function");
        if (json_is_string(x)) json_array_set(req, i, x);
    }
    json_object_del(s, "properties");
    return s;
}

static void diff_params(json_t *out, const char *fn, const json_t *x, const json_t *y)
{
    json_t *pa = props_list(x), *pb = props_list(y);
    size_t *m = match(pa, pb, "xf", NULL);
    char at[512];
    size_t na = json_array_size(pa), nb = json_array_size(pb);
    for (size_t j = 0; j < na; j++) {
        int found = 0;
        for (size_t i = 0; i < nb; i++) found |= m[i] == j;
        json_t *e = json_array_get(pa, j);
        snprintf(at, sizeof at, "%s/%s", fn, str(e, "xf"));
        if (!found) change(out, "param_removed", at, json_object_get(e, "name"), NULL);
    }
    for (size_t i = 0; i < nb; i++) {
        json_t *e = json_array_get(pb, i);
        snprintf(at, sizeof at, "%s/%s", fn, str(e, "xf"));
        if (m[i] == (size_t)-1) { change(out, "param_added", at, NULL, json_object_get(e, "name")); continue; }
        json_t *d = json_array_get(pa, m[i]);
        field(out, "param_renamed", at, d, e, "name");
        field(out, "param_schema", at, d, e, "schema");
    }
    reordered(out, "params_reordered", pa, pb, m, "xf");
    json_t *sa = schema_shape(x), *sb = schema_shape(y);
    if (!json_equal(sa, sb)) change(out, "tool_schema", fn, sa, sb);
    json_decref(sa);
    json_decref(sb);
    free(m);
    json_decref(pa);
    json_decref(pb);
}

static void diff_tools(json_t *out, const json_t *a, const json_t *b)
{
    size_t *m = match(a, b, "function", "name");
    removed_added(out, "tool", a, b, m, "function", "name");
    reordered(out, "tools_reordered", a, b, m, "function");
    for (size_t i = 0; i < json_array_size(b); i++) {
        if (m[i] == (size_t)-1) continue;
        const json_t *x = json_array_get(a, m[i]), *y = json_array_get(b, i);
        const char *at = str(y, "function");
        field(out, "tool_renamed", at, x, y, "name");
        field(out, "tool_description", at, x, y, "description");
        diff_params(out, at, x, y);
    }
    free(m);
}

/* ---- prompt blocks ------------------------------------------------------ */

static void diff_prompt_params(json_t *out, const char *id, const json_t *pa, const json_t *pb)
{
    const char *k;
    json_t *v;
    char at[512];
    json_object_foreach((json_t *)pa, k, v) {
        snprintf(at, sizeof at, "%s/%s", id, k);
        json_t *w = json_object_get(pb, k);
        if (!w) { change(out, "prompt_param_removed", at, v, NULL); continue; }
        field(out, "param_value", at, v, w, "value");
        if (!same(json_object_get(v, "min"), json_object_get(w, "min")) ||
            !same(json_object_get(v, "max"), json_object_get(w, "max"))) {
            json_t *f = json_pack("[OO]", json_object_get(v, "min") ? json_object_get(v, "min") : json_null(),
                                  json_object_get(v, "max") ? json_object_get(v, "max") : json_null());
            json_t *t = json_pack("[OO]", json_object_get(w, "min") ? json_object_get(w, "min") : json_null(),
                                  json_object_get(w, "max") ? json_object_get(w, "max") : json_null());
            change(out, "param_range", at, f, t);
            json_decref(f);
            json_decref(t);
        }
    }
    json_object_foreach((json_t *)pb, k, v) {
        snprintf(at, sizeof at, "%s/%s", id, k);
        if (!json_object_get(pa, k)) change(out, "prompt_param_added", at, NULL, v);
    }
}

static void diff_blocks(json_t *out, const json_t *a, const json_t *b)
{
    size_t *m = match(a, b, "id", NULL);
    removed_added(out, "block", a, b, m, "id", "text");
    reordered(out, "blocks_reordered", a, b, m, "id");
    for (size_t i = 0; i < json_array_size(b); i++) {
        if (m[i] == (size_t)-1) continue;
        const json_t *x = json_array_get(a, m[i]), *y = json_array_get(b, i);
        const char *at = str(y, "id");
        field(out, "block_text", at, x, y, "text");
        json_t *ia = json_object_get(x, "items"), *ib = json_object_get(y, "items");
        json_t *ea = json_array(), *eb = json_array();
        diff_list(out, "item", at, ia ? ia : ea, ib ? ib : eb);
        json_decref(ea);
        json_decref(eb);
        diff_prompt_params(out, at, json_object_get(x, "params"), json_object_get(y, "params"));
    }
    free(m);
}

/* ---- hooks, loader, the rest ------------------------------------------ */

static void diff_hooks(json_t *out, const json_t *a, const json_t *b)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)a, k, v) {
        json_t *w = json_object_get(b, k);
        if (!w) change(out, "hook_removed", k, v, NULL);
        else if (!json_equal(v, w)) change(out, "hook_changed", k, v, w);
    }
    json_object_foreach((json_t *)b, k, v)
        if (!json_object_get(a, k)) change(out, "hook_added", k, NULL, v);
}

static void diff_loader(json_t *out, const json_t *a, const json_t *b)
{
    field(out, "loader_renamed", "skill_loader", a, b, "name");
    const char *k;
    json_t *v;
    json_t *keys = json_object();
    if (json_is_object(a)) json_object_update(keys, (json_t *)a);
    if (json_is_object(b)) json_object_update_missing(keys, (json_t *)b);
    json_object_foreach(keys, k, v)
        if (strcmp(k, "name")) field(out, "loader_changed", k, a, b, k);
    json_decref(keys);
}

json_t *harness_diff(const json_t *a, const json_t *b)
{
    json_t *out = json_array();
    field(out, "harness_renamed", "name", a, b, "name");
    field(out, "version_changed", "version", a, b, "version");
    const json_t *ba = json_object_get(json_object_get(a, "system_prompt"), "blocks");
    const json_t *bb = json_object_get(json_object_get(b, "system_prompt"), "blocks");
    diff_blocks(out, ba, bb);
    diff_loader(out, json_object_get(a, "skill_loader"), json_object_get(b, "skill_loader"));
    diff_skills(out, json_object_get(a, "skills"), json_object_get(b, "skills"));
    diff_tools(out, json_object_get(a, "tools"), json_object_get(b, "tools"));
    diff_hooks(out, json_object_get(a, "hooks"), json_object_get(b, "hooks"));
    if (!json_array_size(out) && !same(a, b)) change(out, "other", "", NULL, NULL);
    return out;
}

char *harness_diff_text(const json_t *c)
{
    sbuf b;
    sbuf_init(&b);
    sbuf_printf(&b, "%s", str(c, "change"));
    if (*str(c, "at")) sbuf_printf(&b, " %s", str(c, "at"));
    json_t *from = json_object_get(c, "from"), *to = json_object_get(c, "to");
    char *f = from ? json_dumps(from, HAT_JSON_FLAGS | JSON_ENCODE_ANY) : NULL;
    char *t = to ? json_dumps(to, HAT_JSON_FLAGS | JSON_ENCODE_ANY) : NULL;
    if (f && t) sbuf_printf(&b, ": %s -> %s", f, t);
    else if (f) sbuf_printf(&b, ": %s", f);
    else if (t) sbuf_printf(&b, ": %s", t);
    free(f);
    free(t);
    return sbuf_detach(&b);
}
