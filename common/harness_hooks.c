/* harness_hooks.c — the hooks that shape what a tool call returns and what
 * the runtime says back: error formats, result envelopes (and their
 * inverse, so HSA can re-envelope a recorded result), and hook message
 * templates.  The simulator and hsa-augment both go through these, so a
 * trajectory and its relabelled variant use one definition. */
#include "harness.h"
#include "jsonl.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_ERROR_FORMAT "ERROR {code}: {message}"

const json_t *harness_functions(void)
{
    static json_t *fns;
    static int tried;
    if (!tried) {
        tried = 1;
        char *p = hat_data_path("functions.json");
        if (!p) hat_warn("data file functions.json not found (set HAT_DATA)");
        else fns = json_load_path(p);
        free(p);
    }
    return fns;
}

static const json_t *hooks_of(const json_t *h) { return json_object_get(h, "hooks"); }

char *harness_format_error(const json_t *h, const char *tool, const char *fault, const char *message)
{
    const char *fmt = json_string_value(json_object_get(hooks_of(h), "error_format"));
    json_t *code = json_object_get(json_object_get(harness_functions(), "fault_codes"),
                                   fault ? fault : "");
    json_t *vars = json_object();
    /* An unknown fault keeps its name as the code: visible, never invented. */
    json_object_set_new(vars, "code", code ? json_copy(code) : json_string(fault ? fault : ""));
    json_object_set_new(vars, "message", json_string(message ? message : ""));
    json_object_set_new(vars, "tool", json_string(tool ? tool : ""));
    char *s = harness_fill(fmt ? fmt : DEFAULT_ERROR_FORMAT, vars);
    json_decref(vars);
    return s;
}

/* The envelope: style and keys, with the documented defaults. */
typedef struct {
    int wrapped;
    const char *ok, *data, *error;
} envelope;

static envelope envelope_of(const json_t *h)
{
    const json_t *e = json_object_get(hooks_of(h), "result_envelope");
    const char *style = json_string_value(json_object_get(e, "style"));
    envelope v = { !style || strcmp(style, "plain"), "ok", "data", "error" };
    const char *s;
    if ((s = json_string_value(json_object_get(e, "ok_key")))) v.ok = s;
    if ((s = json_string_value(json_object_get(e, "data_key")))) v.data = s;
    if ((s = json_string_value(json_object_get(e, "error_key")))) v.error = s;
    if (!e) v.wrapped = 0;  /* no envelope hook: results go out as they are */
    return v;
}

char *harness_wrap_result(const json_t *h, const json_t *result)
{
    envelope e = envelope_of(h);
    if (!e.wrapped) return json_dumps(result, HAT_JSON_FLAGS | JSON_ENCODE_ANY);
    json_t *o = json_object();
    json_object_set_new(o, e.ok, json_true());
    json_object_set(o, e.data, (json_t *)result);
    char *s = json_dumps(o, HAT_JSON_FLAGS);
    json_decref(o);
    return s;
}

char *harness_wrap_error(const json_t *h, const char *formatted)
{
    envelope e = envelope_of(h);
    if (!e.wrapped) return xstrdup(formatted ? formatted : "");
    json_t *o = json_object();
    json_object_set_new(o, e.ok, json_false());
    json_object_set_new(o, e.error, json_string(formatted ? formatted : ""));
    char *s = json_dumps(o, HAT_JSON_FLAGS);
    json_decref(o);
    return s;
}

/* Does text match a template whose {placeholders} match any run of text? */
static int tmpl_match(const char *t, const char *s)
{
    while (*t) {
        if (*t == '{') {
            const char *close = strchr(t, '}');
            size_t n = close ? (size_t)(close - t - 1) : 0;
            int ident = n > 0;
            for (size_t i = 0; i < n; i++) {
                char c = t[1 + i];
                ident &= (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (i && c >= '0' && c <= '9'));
            }
            if (ident) {
                for (const char *p = s;; p++) {
                    if (tmpl_match(close + 1, p)) return 1;
                    if (!*p) return 0;
                }
            }
        }
        if (*t != *s) return 0;
        t++, s++;
    }
    return !*s;
}

int harness_unwrap(const json_t *h, const char *text, json_t **result, char **error)
{
    envelope e = envelope_of(h);
    if (result) *result = NULL;
    if (error) *error = NULL;
    if (!text) return -1;
    if (!e.wrapped) {
        const char *fmt = json_string_value(json_object_get(hooks_of(h), "error_format"));
        json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
        if (!j || tmpl_match(fmt ? fmt : DEFAULT_ERROR_FORMAT, text)) {
            json_decref(j);
            if (error) *error = xstrdup(text);
            return 0;
        }
        if (result) *result = j;
        else json_decref(j);
        return 1;
    }
    json_t *j = json_loads(text, 0, NULL);
    json_t *ok = json_object_get(j, e.ok);
    int rc = -1;
    if (json_is_true(ok) && json_object_get(j, e.data) && json_object_size(j) == 2) {
        if (result) *result = json_incref(json_object_get(j, e.data));
        rc = 1;
    } else if (json_is_false(ok) && json_is_string(json_object_get(j, e.error)) &&
               json_object_size(j) == 2) {
        if (error) *error = xstrdup(json_string_value(json_object_get(j, e.error)));
        rc = 0;
    }
    json_decref(j);
    return rc;
}

char *harness_hook_message(const json_t *h, const char *hook, const char *field, const json_t *vars)
{
    const json_t *v = json_object_get(hooks_of(h), hook ? hook : "");
    if (field) v = json_object_get(v, field);
    const char *t = json_string_value(v);
    return t ? harness_fill(t, vars) : NULL;
}
