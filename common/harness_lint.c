/* harness_lint.c — every problem of a compiled harness, each with the file
 * it came from and the JSON path of the offending value, so harness-lint
 * can report them all at once and editors can jump to them.  The stable
 * vocabulary (functions, their params, hooks, fault codes, the placeholders
 * each hook template may use) comes from data/functions.json. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "harness.h"
#include "hsa.h"
#include "util.h"

#include <pcre2.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    json_t *out;
    const json_t *origins;
    const json_t *fns;
} lint;

const char *harness_origin(const json_t *origins, const char *path)
{
    const char *best = NULL, *k;
    size_t bestn = 0;
    json_t *v;
    json_object_foreach((json_t *)origins, k, v) {
        size_t n = strlen(k);
        if (strncmp(path, k, n) || (path[n] && path[n] != '/')) continue;
        if (!best || n > bestn) best = json_string_value(v), bestn = n;
    }
    return best ? best : "";
}

static void report(lint *L, const char *sev, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void report(lint *L, const char *sev, const char *path, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *p = json_object();
    json_object_set_new(p, "file", json_string(harness_origin(L->origins, path)));
    json_object_set_new(p, "path", json_string(path));
    json_object_set_new(p, "severity", json_string(sev));
    json_object_set_new(p, "message", json_string(msg));
    json_array_append_new(L->out, p);
}

#define ERR(L, path, ...) report(L, "error", path, __VA_ARGS__)
#define WARN(L, path, ...) report(L, "warning", path, __VA_ARGS__)

/* A JSON path one step below `at` (keys escaped per RFC 6901). */
static char *sub(const char *at, const char *key)
{
    sbuf b;
    sbuf_init(&b);
    sbuf_printf(&b, "%s/", at);
    for (const char *p = key; *p; p++) {
        if (*p == '~') sbuf_puts(&b, "~0");
        else if (*p == '/') sbuf_puts(&b, "~1");
        else sbuf_putc(&b, *p);
    }
    return sbuf_detach(&b);
}

static char *subi(const char *at, size_t i) { return xasprintf("%s/%zu", at, i); }

/* A required non-empty string field; returns it or NULL. */
static const char *need_string(lint *L, const json_t *o, const char *key, const char *at)
{
    json_t *v = json_object_get(o, key);
    char *p = sub(at, key);
    const char *s = json_string_value(v);
    if (!v) ERR(L, at, "no \"%s\"", key);
    else if (!s) ERR(L, p, "must be a string");
    else if (!*s) ERR(L, p, "is empty");
    free(p);
    return s && *s ? s : NULL;
}

/* Placeholders of a template that are not in `allowed` (object or array of names). */
static void check_placeholders(lint *L, const char *text, const json_t *allowed, const char *at,
                               const char *what)
{
    for (const char *p = text; p && (p = strchr(p, '{')); p++) {
        size_t n = 0;
        while (p[1 + n] == '_' || (p[1 + n] >= 'a' && p[1 + n] <= 'z') ||
               (p[1 + n] >= 'A' && p[1 + n] <= 'Z') || (n && p[1 + n] >= '0' && p[1 + n] <= '9'))
            n++;
        if (!n || p[1 + n] != '}') continue;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)n, p + 1);
        int ok = 0;
        if (json_is_object(allowed)) ok = json_object_get(allowed, name) != NULL;
        size_t i;
        json_t *a;
        json_array_foreach(allowed, i, a) ok |= !strcmp(json_string_value(a) ? json_string_value(a) : "", name);
        if (!ok) ERR(L, at, "placeholder {%s} %s", name, what);
    }
}

static int uses_placeholder(const char *text, const char *name)
{
    char *pat = xasprintf("{%s}", name);
    int r = text && strstr(text, pat);
    free(pat);
    return r;
}

/* ---- system prompt ------------------------------------------------------ */

static void lint_param(lint *L, const char *name, const json_t *p, const char *at)
{
    if (!json_is_object(p)) { ERR(L, at, "param must be an object with a value"); return; }
    json_t *v = json_object_get(p, "value"), *lo = json_object_get(p, "min"),
           *hi = json_object_get(p, "max");
    char *pv = sub(at, "value");
    if (!v) ERR(L, at, "param \"%s\" has no value", name);
    else if (lo || hi) {
        if (!json_is_number(v)) ERR(L, pv, "a param with min/max must have a numeric value");
        if (!lo || !hi) ERR(L, at, "param \"%s\" needs both min and max", name);
        else if (!json_is_number(lo) || !json_is_number(hi)) ERR(L, at, "min and max must be numbers");
        else {
            double a = json_number_value(lo), b = json_number_value(hi);
            if (a > b) ERR(L, at, "min %g > max %g", a, b);
            else if (json_is_number(v) && (json_number_value(v) < a || json_number_value(v) > b))
                ERR(L, pv, "value %g outside [%g, %g]", json_number_value(v), a, b);
        }
    } else if (!json_is_string(v) && !json_is_number(v)) {
        ERR(L, pv, "value must be a string or a number");
    }
    free(pv);
    if (!json_object_get(json_object_get(L->fns, "prompt_params"), name))
        WARN(L, at, "param \"%s\" is not a stable prompt param of functions.json", name);
}

static void lint_block(lint *L, const json_t *b, const char *at, json_t *ids, json_t *pnames)
{
    if (!json_is_object(b)) { ERR(L, at, "block must be an object"); return; }
    const char *id = need_string(L, b, "id", at);
    if (id) {
        json_t *prev = json_object_get(ids, id);
        if (prev) ERR(L, at, "duplicate block id \"%s\" (also %s)", id, json_string_value(prev));
        else json_object_set_new(ids, id, json_string(at));
    }
    json_t *text = json_object_get(b, "text"), *items = json_object_get(b, "items"),
           *params = json_object_get(b, "params");
    char *pt = sub(at, "text"), *pi = sub(at, "items"), *pp = sub(at, "params");
    if (!json_is_string(text)) ERR(L, text ? pt : at, text ? "must be a string" : "no \"text\"");
    else if (!json_string_length(text) && !json_array_size(items)) ERR(L, pt, "empty text");
    if (items && !json_is_array(items)) ERR(L, pi, "must be an array of strings");
    if (params && !json_is_object(params)) ERR(L, pp, "must be an object");
    const char *k;
    json_t *v;
    json_object_foreach(params, k, v) {
        char *p = sub(pp, k);
        lint_param(L, k, v, p);
        json_t *prev = json_object_get(pnames, k);
        if (prev) ERR(L, p, "param \"%s\" also declared at %s", k, json_string_value(prev));
        else json_object_set_new(pnames, k, json_string(p));
        int used = uses_placeholder(json_string_value(text), k);
        size_t i;
        json_t *it;
        json_array_foreach(items, i, it) used |= uses_placeholder(json_string_value(it), k);
        if (!used) WARN(L, p, "param \"%s\" is declared but not used", k);
        free(p);
    }
    check_placeholders(L, json_string_value(text), params, pt, "has no param");
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) {
        char *p = subi(pi, i);
        if (!json_is_string(it)) ERR(L, p, "item must be a string");
        else if (!json_string_length(it)) ERR(L, p, "empty item");
        else check_placeholders(L, json_string_value(it), params, p, "has no param");
        free(p);
    }
    free(pt);
    free(pi);
    free(pp);
}

static void lint_prompt(lint *L, const json_t *h, json_t *pnames)
{
    json_t *sp = json_object_get(h, "system_prompt");
    json_t *blocks = json_object_get(sp, "blocks");
    if (!json_is_object(sp)) { ERR(L, "/system_prompt", "no system_prompt object"); return; }
    if (!json_is_array(blocks)) { ERR(L, "/system_prompt/blocks", "must be an array"); return; }
    json_t *ids = json_object();
    size_t i;
    json_t *b;
    json_array_foreach(blocks, i, b) {
        char *p = subi("/system_prompt/blocks", i);
        lint_block(L, b, p, ids, pnames);
        free(p);
    }
    json_decref(ids);
}

/* ---- JSON Schema ---------------------------------------------------------- */

static int type_name_ok(const char *t)
{
    static const char *const names[] = { "string", "integer", "number", "boolean", "array",
                                         "object", "null", NULL };
    for (size_t i = 0; t && names[i]; i++)
        if (!strcmp(t, names[i])) return 1;
    return 0;
}

static int has_type(const json_t *type, const char *want)
{
    if (json_is_string(type)) return !strcmp(json_string_value(type), want);
    size_t i;
    json_t *t;
    json_array_foreach(type, i, t) if (json_is_string(t) && !strcmp(json_string_value(t), want)) return 1;
    return 0;
}

static void lint_schema(lint *L, const json_t *s, const char *at, int top)
{
    if (!json_is_object(s)) { ERR(L, at, "schema must be an object"); return; }
    json_t *type = json_object_get(s, "type");
    char *pt = sub(at, "type");
    if (!type) ERR(L, at, top ? "parameters need \"type\": \"object\"" : "property without type");
    else if (json_is_string(type) && !type_name_ok(json_string_value(type)))
        ERR(L, pt, "unknown type \"%s\"", json_string_value(type));
    else if (json_is_array(type)) {
        size_t i;
        json_t *t;
        json_array_foreach(type, i, t)
            if (!type_name_ok(json_string_value(t))) ERR(L, pt, "bad type name in the list");
    } else if (!json_is_string(type)) ERR(L, pt, "type must be a string or an array of strings");
    if (top && type && !(json_is_string(type) && !strcmp(json_string_value(type), "object")))
        ERR(L, pt, "parameters must be of type object");
    free(pt);
    json_t *v;
    const char *k;
    if ((v = json_object_get(s, "description")) && !json_is_string(v)) {
        char *p = sub(at, "description");
        ERR(L, p, "must be a string");
        free(p);
    }
    json_t *props = json_object_get(s, "properties");
    char *pp = sub(at, "properties");
    if (props && !json_is_object(props)) ERR(L, pp, "properties must be an object");
    json_object_foreach(props, k, v) {
        char *p = sub(pp, k);
        lint_schema(L, v, p, 0);
        free(p);
    }
    free(pp);
    json_t *req = json_object_get(s, "required");
    char *pr = sub(at, "required");
    if (req && !json_is_array(req)) ERR(L, pr, "required must be an array of names");
    size_t i;
    json_array_foreach(req, i, v) {
        char *p = subi(pr, i);
        if (!json_is_string(v)) ERR(L, p, "must be a string");
        else if (!json_object_get(props, json_string_value(v)))
            ERR(L, p, "required \"%s\" is not a property", json_string_value(v));
        free(p);
    }
    free(pr);
    if ((v = json_object_get(s, "items"))) {
        char *p = sub(at, "items");
        if (!has_type(type, "array")) ERR(L, p, "items on a schema that is not an array");
        lint_schema(L, v, p, 0);
        free(p);
    }
    if ((v = json_object_get(s, "enum")) && (!json_is_array(v) || !json_array_size(v))) {
        char *p = sub(at, "enum");
        ERR(L, p, "enum must be a non-empty array");
        free(p);
    }
    json_t *lo = json_object_get(s, "minimum"), *hi = json_object_get(s, "maximum");
    if ((lo && !json_is_number(lo)) || (hi && !json_is_number(hi)))
        ERR(L, at, "minimum and maximum must be numbers");
    else if (lo && hi && json_number_value(lo) > json_number_value(hi))
        ERR(L, at, "minimum %g > maximum %g", json_number_value(lo), json_number_value(hi));
}

/* ---- skills and tools ---------------------------------------------------- */

static void lint_skill(lint *L, const json_t *s, const char *at, json_t *names)
{
    if (!json_is_object(s)) { ERR(L, at, "skill must be an object"); return; }
    const char *name = need_string(L, s, "name", at);
    char *pn = sub(at, "name"), *pf = sub(at, "function"), *pk = sub(at, "kind"),
         *pr = sub(at, "rules");
    if (name) {
        json_t *prev = json_object_get(names, name);
        if (prev) ERR(L, pn, "duplicate skill name \"%s\" (also %s)", name, json_string_value(prev));
        else json_object_set_new(names, name, json_string(pn));
    }
    const char *fn = need_string(L, s, "function", at);
    json_t *def = json_object_get(json_object_get(L->fns, "skill_functions"), fn ? fn : "");
    if (fn && !def) ERR(L, pf, "unknown skill function \"%s\"", fn);
    const char *kind = need_string(L, s, "kind", at);
    int kind_ok = kind && (!strcmp(kind, "reply") || !strcmp(kind, "strategy"));
    if (kind && !kind_ok) ERR(L, pk, "kind must be reply or strategy, not \"%s\"", kind);
    const char *dk = json_string_value(json_object_get(def, "kind"));
    if (kind_ok && dk && strcmp(dk, "any") && strcmp(dk, kind))
        WARN(L, pk, "function \"%s\" is a %s skill, not %s", fn, dk, kind);
    need_string(L, s, "description", at);
    json_t *rules = json_object_get(s, "rules");
    if (!json_is_array(rules)) ERR(L, rules ? pr : at, rules ? "must be an array" : "no \"rules\"");
    else if (!json_array_size(rules)) ERR(L, pr, "empty rules");
    size_t i;
    json_t *r;
    json_array_foreach(rules, i, r) {
        char *p = subi(pr, i);
        if (!json_is_string(r)) ERR(L, p, "rule must be a string");
        else if (!json_string_length(r)) ERR(L, p, "empty rule");
        free(p);
    }
    free(pn);
    free(pf);
    free(pk);
    free(pr);
}

static int type_fits(const json_t *type, const char *want)
{
    if (!want) return 1;
    if (has_type(type, want)) return 1;
    return !strcmp(want, "number") && has_type(type, "integer");
}

/* Properties against the function's params, matched by x-function. */
static void lint_tool_params(lint *L, const json_t *params, const json_t *def, const char *fn,
                             const char *at)
{
    json_t *props = json_object_get(params, "properties");
    json_t *want = json_object_get(def, "params");
    json_t *seen = json_object();
    char *pp = sub(at, "properties");
    const char *k;
    json_t *v;
    json_object_foreach(props, k, v) {
        char *p = sub(pp, k), *px = sub(p, "x-function");
        json_t *xf = json_object_get(v, "x-function");
        const char *x = json_string_value(xf);
        if (!xf) ERR(L, p, "property has no x-function");
        else if (!x) ERR(L, px, "x-function must be a string");
        else if (def && !json_object_get(want, x))
            ERR(L, px, "unknown x-function \"%s\" for %s", x, fn);
        else if (json_object_get(seen, x)) ERR(L, px, "x-function \"%s\" used twice", x);
        else {
            json_object_set_new(seen, x, json_string(k));
            const char *t = json_string_value(json_object_get(want, x));
            if (def && !type_fits(json_object_get(v, "type"), t)) {
                char *ptype = sub(p, "type");
                ERR(L, ptype, "%s of %s is a %s", x, fn, t);
                free(ptype);
            }
        }
        free(p);
        free(px);
    }
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(def, "required"), i, r) {
        const char *x = json_string_value(r);
        json_t *pn = json_object_get(seen, x);
        if (!pn) { ERR(L, pp, "no property with x-function \"%s\" (required by %s)", x, fn); continue; }
        int listed = 0;
        size_t j;
        json_t *q;
        json_array_foreach(json_object_get(params, "required"), j, q)
            listed |= json_is_string(q) && !strcmp(json_string_value(q), json_string_value(pn));
        if (!listed) WARN(L, pp, "\"%s\" (%s) should be in required", json_string_value(pn), x);
    }
    json_decref(seen);
    free(pp);
}

static void lint_tool(lint *L, const json_t *t, const char *at, json_t *names, const char *loader)
{
    if (!json_is_object(t)) { ERR(L, at, "tool must be an object"); return; }
    const char *name = need_string(L, t, "name", at);
    char *pn = sub(at, "name"), *pf = sub(at, "function"), *pp = sub(at, "parameters");
    if (name) {
        json_t *prev = json_object_get(names, name);
        if (prev) ERR(L, pn, "duplicate tool name \"%s\" (also %s)", name, json_string_value(prev));
        else json_object_set_new(names, name, json_string(pn));
        if (loader && !strcmp(name, loader)) ERR(L, pn, "tool name \"%s\" is the skill loader's", name);
    }
    const char *fn = need_string(L, t, "function", at);
    json_t *def = json_object_get(json_object_get(L->fns, "tool_functions"), fn ? fn : "");
    if (fn && !def) ERR(L, pf, "unknown tool function \"%s\"", fn);
    need_string(L, t, "description", at);
    json_t *params = json_object_get(t, "parameters");
    if (!params) ERR(L, at, "no \"parameters\"");
    else {
        lint_schema(L, params, pp, 1);
        if (def) lint_tool_params(L, params, def, fn, pp);
    }
    free(pn);
    free(pf);
    free(pp);
}

static void lint_loader(lint *L, const json_t *h)
{
    json_t *l = json_object_get(h, "skill_loader");
    if (!json_is_object(l)) { ERR(L, "/skill_loader", "no skill_loader object"); return; }
    need_string(L, l, "name", "/skill_loader");
    need_string(L, l, "description", "/skill_loader");
    need_string(L, l, "argument", "/skill_loader");
    json_t *ad = json_object_get(l, "argument_description"), *pre = json_object_get(l, "preamble");
    if (ad && !json_is_string(ad)) ERR(L, "/skill_loader/argument_description", "must be a string");
    if (pre && !json_is_string(pre)) ERR(L, "/skill_loader/preamble", "must be a string");
    check_placeholders(L, json_string_value(pre),
                       json_object_get(json_object_get(L->fns, "hook_templates"), "skill_loader.preamble"),
                       "/skill_loader/preamble", "is not allowed here");
    json_t *line = json_object_get(l, "line");
    if (line && !json_is_string(line)) ERR(L, "/skill_loader/line", "must be a string");
    else if (line && harness_skill_line_error(json_string_value(line)))
        ERR(L, "/skill_loader/line", "%s: the model finds a skill's name in its line",
            harness_skill_line_error(json_string_value(line)));
    check_placeholders(L, json_string_value(line),
                       json_object_get(json_object_get(L->fns, "hook_templates"), "skill_loader.line"),
                       "/skill_loader/line", "is not allowed here");
}

static void lint_skills_tools(lint *L, const json_t *h)
{
    json_t *skills = json_object_get(h, "skills"), *tools = json_object_get(h, "tools");
    json_t *names = json_object();
    size_t i;
    json_t *v;
    int reply = 0;
    if (!json_is_array(skills)) ERR(L, "/skills", "must be an array");
    json_array_foreach(skills, i, v) {
        char *p = subi("/skills", i);
        lint_skill(L, v, p, names);
        const char *k = json_string_value(json_object_get(v, "kind"));
        reply |= k && !strcmp(k, "reply");
        free(p);
    }
    if (json_is_array(skills) && !reply) ERR(L, "/skills", "no reply skill");
    json_decref(names);
    names = json_object();
    if (!json_is_array(tools)) ERR(L, "/tools", "must be an array");
    const char *loader = harness_loader_name(h);
    json_array_foreach(tools, i, v) {
        char *p = subi("/tools", i);
        lint_tool(L, v, p, names, loader);
        free(p);
    }
    json_decref(names);
}

/* ---- hooks ---------------------------------------------------------------- */

static void lint_template(lint *L, const json_t *hook, const char *hname, const char *field,
                          const char *at, int required)
{
    json_t *v = field ? json_object_get(hook, field) : (json_t *)hook;
    char *p = field ? sub(at, field) : xstrdup(at);
    char key[128];
    snprintf(key, sizeof key, "%s%s%s", hname, field ? "." : "", field ? field : "");
    if (!v) { if (required) ERR(L, at, "no \"%s\"", field); }
    else if (!json_is_string(v)) ERR(L, p, "must be a string");
    else check_placeholders(L, json_string_value(v),
                            json_object_get(json_object_get(L->fns, "hook_templates"), key), p,
                            "is not one this hook fills");
    free(p);
}

static void lint_patterns(lint *L, const json_t *hook, const char *at)
{
    json_t *pats = json_object_get(hook, "patterns");
    char *pp = sub(at, "patterns");
    if (!json_is_array(pats)) ERR(L, pats ? pp : at, pats ? "must be an array of regexes" : "no \"patterns\"");
    size_t i;
    json_t *v;
    json_array_foreach(pats, i, v) {
        char *p = subi(pp, i);
        const char *re = json_string_value(v);
        if (!re) { ERR(L, p, "must be a string"); free(p); continue; }
        int code;
        PCRE2_SIZE off;
        pcre2_code *c = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED,
                                      PCRE2_CASELESS | PCRE2_UTF, &code, &off, NULL);
        if (!c) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(code, msg, sizeof msg);
            ERR(L, p, "bad regex at offset %zu: %s", (size_t)off, (const char *)msg);
        }
        pcre2_code_free(c);
        free(p);
    }
    free(pp);
}

static void lint_hook(lint *L, const char *name, const json_t *hk, const char *at,
                      const json_t *pnames)
{
    int obj = json_is_object(hk);
    if (!strcmp(name, "error_format")) {
        if (!json_is_string(hk)) { ERR(L, at, "must be a string"); return; }
        lint_template(L, hk, name, NULL, at, 1);
        if (!strstr(json_string_value(hk), "{message}")) ERR(L, at, "error_format has no {message}");
        return;
    }
    if (!obj) { ERR(L, at, "hook must be an object"); return; }
    if (!strcmp(name, "input_check")) {
        lint_patterns(L, hk, at);
        lint_template(L, hk, name, "message", at, 1);
    } else if (!strcmp(name, "tool_args_check") || !strcmp(name, "skill_required") ||
               !strcmp(name, "factual_risk")) {
        lint_template(L, hk, name, "message", at, 1);
    } else if (!strcmp(name, "reply_format")) {
        static const char *const ps[] = { "max_chars_param", "max_emoji_param", NULL };
        for (size_t i = 0; ps[i]; i++) {
            json_t *v = json_object_get(hk, ps[i]);
            char *p = sub(at, ps[i]);
            if (v && !json_is_string(v)) ERR(L, p, "must be a string");
            else if (v && !json_object_get(pnames, json_string_value(v)))
                ERR(L, p, "no prompt param \"%s\"", json_string_value(v));
            free(p);
        }
        lint_template(L, hk, name, "message", at, 1);
    } else if (!strcmp(name, "tool_retry")) {
        json_t *m = json_object_get(hk, "max_retries"), *on = json_object_get(hk, "retry_on");
        char *pm = sub(at, "max_retries"), *po = sub(at, "retry_on");
        if (!json_is_integer(m) || json_integer_value(m) < 0)
            ERR(L, m ? pm : at, m ? "must be a non-negative integer" : "no \"max_retries\"");
        if (on && !json_is_array(on)) ERR(L, po, "must be an array of fault names");
        size_t i;
        json_t *f;
        json_array_foreach(on, i, f) {
            char *p = subi(po, i);
            if (!json_object_get(json_object_get(L->fns, "fault_codes"),
                                 json_string_value(f) ? json_string_value(f) : ""))
                ERR(L, p, "unknown fault (see fault_codes in functions.json)");
            free(p);
        }
        free(pm);
        free(po);
    } else if (!strcmp(name, "result_envelope")) {
        const char *style = json_string_value(json_object_get(hk, "style"));
        char *ps = sub(at, "style");
        if (!style) ERR(L, json_object_get(hk, "style") ? ps : at, "style must be a string");
        else if (strcmp(style, "wrapped") && strcmp(style, "plain"))
            ERR(L, ps, "unknown envelope style \"%s\" (wrapped or plain)", style);
        static const char *const ks[] = { "ok_key", "data_key", "error_key", NULL };
        for (size_t i = 0; ks[i]; i++) {
            json_t *v = json_object_get(hk, ks[i]);
            char *p = sub(at, ks[i]);
            if (v && (!json_is_string(v) || !json_string_length(v))) ERR(L, p, "must be a non-empty string");
            for (size_t j = 0; j < i; j++)
                if (v && json_equal(v, json_object_get(hk, ks[j])))
                    ERR(L, p, "same key as %s", ks[j]);
            free(p);
        }
        free(ps);
    } else if (!strcmp(name, "reply_filter")) {
        json_t *b = json_object_get(hk, "banned");
        char *pb = sub(at, "banned");
        if (!json_is_array(b)) ERR(L, b ? pb : at, b ? "must be an array of terms" : "no \"banned\"");
        size_t i;
        json_t *t;
        json_array_foreach(b, i, t) {
            if (!json_is_string(t) || !json_string_length(t)) {
                char *p = subi(pb, i);
                ERR(L, p, "must be a non-empty string");
                free(p);
            }
        }
        free(pb);
        lint_template(L, hk, name, "on_violation", at, 1);
    }
}

static void lint_hooks(lint *L, const json_t *h, const json_t *pnames)
{
    json_t *hooks = json_object_get(h, "hooks");
    if (!hooks) return;
    if (!json_is_object(hooks)) { ERR(L, "/hooks", "must be an object"); return; }
    json_t *known = json_object_get(L->fns, "hooks");
    const char *k;
    json_t *v;
    json_object_foreach(hooks, k, v) {
        char *p = sub("/hooks", k);
        int ok = 0;
        size_t i;
        json_t *n;
        json_array_foreach(known, i, n) ok |= !strcmp(json_string_value(n), k);
        if (!ok) WARN(L, p, "unknown hook \"%s\"", k);
        else lint_hook(L, k, v, p, pnames);
        free(p);
    }
}

/* Texts that name something the harness does not define — a renamed
 * tool still called by its old name in a rule, say.  Only words that read
 * as identifiers (snake_case, camelCase) or are written as `code` count,
 * so ordinary words never warn (hsa_unknown_mentions). */
typedef struct { lint *L; json_t *known; } mention_ctx;

static void mention_cb(json_t *parent, const char *key, size_t idx, const char *text,
                       const char *kind, const char *path, void *ud)
{
    (void)parent; (void)key; (void)idx; (void)kind;
    mention_ctx *m = ud;
    json_t *bad = hsa_unknown_mentions(text, m->known);
    size_t i;
    json_t *w;
    json_array_foreach(bad, i, w)
        WARN(m->L, path, "mentions '%s', which is not a skill, tool, parameter or loader of this "
             "harness", json_string_value(w));
    json_decref(bad);
}

static void lint_mentions(lint *L, const json_t *h)
{
    mention_ctx m = { L, hsa_known_words(h) };
    hsa_texts((json_t *)h, HSA_TEXTS_HOOKS | HSA_TEXTS_PATHS, mention_cb, &m);
    json_decref(m.known);
}

json_t *harness_lint(const json_t *h, const json_t *origins)
{
    json_t *empty = json_object();
    lint L = { json_array(), origins ? origins : empty, harness_functions() };
    if (!json_is_object(h)) {
        ERR(&L, "", "a harness must be a JSON object");
    } else {
        json_t *pnames = json_object();
        json_t *v = json_object_get(h, "name");
        if (!json_is_string(v) || !json_string_length(v)) ERR(&L, "/name", "needs a non-empty string name");
        v = json_object_get(h, "version");
        if (v && !json_is_string(v)) ERR(&L, "/version", "must be a string");
        lint_prompt(&L, h, pnames);
        lint_loader(&L, h);
        lint_skills_tools(&L, h);
        lint_hooks(&L, h, pnames);
        lint_mentions(&L, h);
        json_decref(pnames);
    }
    json_decref(empty);
    return L.out;
}
