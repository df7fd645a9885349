/* harness.c — looking things up in a compiled harness, rendering what the
 * model sees (system text, tool list, skill texts), and writing the
 * directory form back out (harness-unpack).  The writer produces the
 * canonical text the loader reads, so unpack and pack are exact inverses. */
#include "harness.h"
#include "jsonl.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- lookups ------------------------------------------------------------ */

static const json_t *find_by(const json_t *arr, const char *field, const char *want)
{
    size_t i;
    const json_t *v;
    if (!want) return NULL;
    json_array_foreach(arr, i, v) {
        const char *s = json_string_value(json_object_get(v, field));
        if (s && !strcmp(s, want)) return v;
    }
    return NULL;
}

const json_t *harness_skill_by_name(const json_t *h, const char *name)
{
    return find_by(json_object_get(h, "skills"), "name", name);
}

const json_t *harness_skill_by_function(const json_t *h, const char *function)
{
    return find_by(json_object_get(h, "skills"), "function", function);
}

const json_t *harness_tool_by_name(const json_t *h, const char *name)
{
    return find_by(json_object_get(h, "tools"), "name", name);
}

const json_t *harness_tool_by_function(const json_t *h, const char *function)
{
    return find_by(json_object_get(h, "tools"), "function", function);
}

const char *harness_param_name_for(const json_t *tool, const char *xfunction)
{
    json_t *props = json_object_get(json_object_get(tool, "parameters"), "properties");
    const char *k;
    json_t *v;
    if (!xfunction) return NULL;
    json_object_foreach(props, k, v) {
        const char *x = json_string_value(json_object_get(v, "x-function"));
        if (x && !strcmp(x, xfunction)) return k;
    }
    return NULL;
}

static json_t *blocks_of(const json_t *h)
{
    return json_object_get(json_object_get(h, "system_prompt"), "blocks");
}

int harness_param(const json_t *h, const char *param, double *value)
{
    size_t i;
    json_t *b;
    json_array_foreach(blocks_of(h), i, b) {
        json_t *v = json_object_get(json_object_get(json_object_get(b, "params"), param), "value");
        if (json_is_number(v)) {
            if (value) *value = json_number_value(v);
            return 0;
        }
    }
    return -1;
}

const char *harness_loader_name(const json_t *h)
{
    return json_string_value(json_object_get(json_object_get(h, "skill_loader"), "name"));
}

const char *harness_loader_argument(const json_t *h)
{
    return json_string_value(json_object_get(json_object_get(h, "skill_loader"), "argument"));
}

/* ---- placeholders ------------------------------------------------------- */

static void put_value(sbuf *b, const json_t *v)
{
    if (json_is_string(v)) sbuf_add(b, json_string_value(v), json_string_length(v));
    else if (json_is_integer(v)) sbuf_printf(b, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v)) sbuf_printf(b, "%.15g", json_real_value(v));
    else {
        char *s = json_compact(v);
        sbuf_puts(b, s);
        free(s);
    }
}

static size_t ident_len(const char *s)
{
    size_t n = 0;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_')) return 0;
    while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
           (s[n] >= '0' && s[n] <= '9') || s[n] == '_')
        n++;
    return n;
}

char *harness_fill(const char *tmpl, const json_t *vars)
{
    sbuf b;
    sbuf_init(&b);
    for (const char *p = tmpl ? tmpl : ""; *p;) {
        size_t n = p[0] == '{' ? ident_len(p + 1) : 0;
        if (n && p[n + 1] == '}') {
            char key[128];
            snprintf(key, sizeof key, "%.*s", (int)n, p + 1);
            json_t *v = json_object_get(vars, key);
            if (v) {
                put_value(&b, v);
                p += n + 2;
                continue;
            }
        }
        sbuf_putc(&b, *p++);
    }
    return sbuf_detach(&b);
}

/* ---- what the model sees ------------------------------------------------ */

char *harness_block_text(const json_t *h, const json_t *block)
{
    sbuf raw;
    sbuf_init(&raw);
    const char *text = json_string_value(json_object_get(block, "text"));
    sbuf_puts(&raw, text ? text : "");
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(block, "items"), i, it) {
        if (raw.len) sbuf_putc(&raw, '\n');
        sbuf_puts(&raw, "- ");
        sbuf_puts(&raw, json_string_value(it) ? json_string_value(it) : "");
    }
    json_t *vars = json_object();
    const char *k;
    json_t *p;
    json_object_foreach(json_object_get(block, "params"), k, p) {
        json_t *v = json_object_get(p, "value");
        if (v) json_object_set(vars, k, v);
    }
    char *out = harness_fill(raw.s ? raw.s : "", vars);
    json_decref(vars);
    sbuf_free(&raw);
    return out;
}

char *harness_skill_line(const char *tmpl, const char *name, const char *description)
{
    if (!tmpl) return xasprintf("- %s: %s", name, description);
    json_t *v = json_pack("{s:s,s:s}", "name", name, "description", description);
    char *t = harness_fill(tmpl, v);
    json_decref(v);
    return t;
}

const char *harness_skill_line_error(const char *tmpl)
{
    return strstr(tmpl, "{name}") ? NULL : "must hold {name}";
}

char *harness_system_text(const json_t *h)
{
    sbuf b;
    sbuf_init(&b);
    size_t i;
    json_t *v;
    json_array_foreach(blocks_of(h), i, v) {
        char *t = harness_block_text(h, v);
        if (b.len) sbuf_puts(&b, "\n\n");
        sbuf_puts(&b, t);
        free(t);
    }
    json_t *skills = json_object_get(h, "skills");
    if (json_array_size(skills)) {
        if (b.len) sbuf_puts(&b, "\n\n");
        const char *pre = json_string_value(json_object_get(json_object_get(h, "skill_loader"),
                                                            "preamble"));
        json_t *vars = json_pack("{s:s}", "loader", harness_loader_name(h) ? harness_loader_name(h) : "");
        char *p = harness_fill(pre ? pre : "", vars);
        json_decref(vars);
        sbuf_puts(&b, p);
        int first = !*p;
        free(p);
        /* each skill's line: "- {name}: {description}" unless the loader
         * gives its own (a small model finds a name by its description
         * more easily when the name comes after it: small-notes e24) */
        const char *line = json_string_value(json_object_get(json_object_get(h, "skill_loader"), "line"));
        json_array_foreach(skills, i, v) {
            const char *n = json_string_value(json_object_get(v, "name"));
            const char *d = json_string_value(json_object_get(v, "description"));
            char *t = harness_skill_line(line, n ? n : "", d ? d : "");
            sbuf_printf(&b, "%s%s", first ? "" : "\n", t);
            free(t);
            first = 0;
        }
    }
    return sbuf_detach(&b);
}

/* A copy of a schema without "x-" keys, at any depth. */
static json_t *strip_x(const json_t *v)
{
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        json_t *c;
        json_object_foreach((json_t *)v, k, c)
            if (strncmp(k, "x-", 2)) json_object_set_new(o, k, strip_x(c));
        return o;
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c) json_array_append_new(a, strip_x(c));
        return a;
    }
    return json_deep_copy(v);
}

static json_t *tool_entry(const char *name, const char *desc, json_t *params)
{
    json_t *f = json_object();
    json_object_set_new(f, "name", json_string(name ? name : ""));
    json_object_set_new(f, "description", json_string(desc ? desc : ""));
    json_object_set_new(f, "parameters", params);
    return json_pack("{s:s,s:o}", "type", "function", "function", f);
}

json_t *harness_tools(const json_t *h)
{
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(h, "tools"), i, t) {
        json_t *p = json_object_get(t, "parameters");
        json_array_append_new(out, tool_entry(json_string_value(json_object_get(t, "name")),
                                              json_string_value(json_object_get(t, "description")),
                                              p ? strip_x(p) : json_pack("{s:s,s:{}}", "type",
                                                                         "object", "properties")));
    }
    json_t *l = json_object_get(h, "skill_loader");
    if (json_is_object(l)) {
        const char *arg = json_string_value(json_object_get(l, "argument"));
        const char *ad = json_string_value(json_object_get(l, "argument_description"));
        if (!arg) arg = "skill";
        json_t *prop = json_pack("{s:s,s:s}", "type", "string", "description", ad ? ad : "");
        json_t *params = json_pack("{s:s,s:{s:o},s:[s]}", "type", "object", "properties", arg,
                                   prop, "required", arg);
        json_array_append_new(out, tool_entry(harness_loader_name(h),
                                              json_string_value(json_object_get(l, "description")),
                                              params));
    }
    return out;
}

char *harness_skill_text(const json_t *h, const json_t *skill)
{
    sbuf b;
    sbuf_init(&b);
    const char *n = json_string_value(json_object_get(skill, "name"));
    sbuf_printf(&b, "# %s", n ? n : "");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(skill, "rules"), i, r)
        sbuf_printf(&b, "\n- %s", json_string_value(r) ? json_string_value(r) : "");
    return sbuf_detach(&b);
}

/* ---- writing the directory form ----------------------------------------- */

static int fit_file_name(const char *s)
{
    return s && *s && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/') && s[0] != '.';
}

/* A front-matter value: literal when it reads back as the same string. */
static void fm_put(sbuf *b, const char *key, const json_t *v)
{
    sbuf_printf(b, "%s: ", key);
    const char *s = json_string_value(v);
    int literal = s && *s && !strchr(s, '\n') && !strchr(s, '\r') && s[0] != ' ' &&
                  s[0] != '\t' && s[strlen(s) - 1] != ' ' && s[strlen(s) - 1] != '\t';
    if (literal) {
        json_t *j = json_loads(s, JSON_DECODE_ANY, NULL);
        if (j || s[0] == '{' || s[0] == '[' || s[0] == '"') literal = 0;
        json_decref(j);
    }
    if (literal) sbuf_puts(b, s);
    else {
        char *j = json_dumps(v, JSON_ENCODE_ANY | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        sbuf_puts(b, j);
        free(j);
    }
    sbuf_putc(b, '\n');
}

static void fm_rest(sbuf *b, const json_t *o, const char *const *skip)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        int s = 0;
        for (size_t i = 0; skip[i]; i++) s |= !strcmp(k, skip[i]);
        if (!s) fm_put(b, k, v);
    }
}

static int write_text(const char *dir, const char *rel, const char *text, size_t len)
{
    char *p = xasprintf("%s/%s", dir, rel);
    /* make the directories between dir and the file (prompt/, skills/NAME/) */
    for (char *s = p + strlen(dir) + 1; (s = strchr(s, '/')); s++) {
        *s = 0;
        int bad = mkdir(p, 0777) && errno != EEXIST;
        if (bad) hat_errat(p, 0, "cannot create directory: %s", strerror(errno));
        *s = '/';
        if (bad) { free(p); return -1; }
    }
    int rc = write_file_atomic(p, text, len);
    free(p);
    return rc;
}

static int write_json(const char *dir, const char *rel, const json_t *v)
{
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, s);
    sbuf_putc(&b, '\n');
    free(s);
    int rc = write_text(dir, rel, b.s, b.len);
    sbuf_free(&b);
    return rc;
}

/* Lines that would not read back: a newline inside an item or rule. */
static int one_line_items(const json_t *arr, const char *what, const char *owner)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (!json_is_string(v) || strchr(json_string_value(v), '\n')) {
            hat_errat(owner, 0, "%s %zu is not a one-line string; the directory form cannot hold it",
                      what, i);
            return -1;
        }
    }
    return 0;
}

static int unpack_block(const json_t *b, size_t i, const char *dir)
{
    const char *id = json_string_value(json_object_get(b, "id"));
    const char *text = json_string_value(json_object_get(b, "text"));
    if (!fit_file_name(id)) {
        hat_errat("system_prompt", 0, "block %zu: id unfit as a file name", i);
        return -1;
    }
    text = text ? text : "";
    size_t tl = strlen(text);
    if (!strncmp(text, "- ", 2) || strstr(text, "\n- ") || (tl && text[tl - 1] == '\n') ||
        (tl && strchr(" \t\r", text[tl - 1]) && json_array_size(json_object_get(b, "items")) == 0)) {
        hat_errat(id, 0, "block text would read back differently (item-like line or trailing blank)");
        return -1;
    }
    if (one_line_items(json_object_get(b, "items"), "item", id)) return -1;
    sbuf s;
    sbuf_init(&s);
    sbuf_puts(&s, "---\n");
    fm_put(&s, "id", json_object_get(b, "id"));
    json_t *p = json_object_get(b, "params");
    if (p && !(json_is_object(p) && !json_object_size(p))) fm_put(&s, "params", p);
    static const char *const skip[] = { "id", "text", "items", "params", NULL };
    fm_rest(&s, b, skip);
    sbuf_puts(&s, "---\n");
    if (*text) { sbuf_puts(&s, text); sbuf_putc(&s, '\n'); }
    size_t k;
    json_t *it;
    json_array_foreach(json_object_get(b, "items"), k, it)
        sbuf_printf(&s, "- %s\n", json_string_value(it));
    char *rel = xasprintf("prompt/%02zu-%s.md", (i + 1) * 10, id);
    int rc = write_text(dir, rel, s.s, s.len);
    free(rel);
    sbuf_free(&s);
    return rc;
}

static int unpack_skill(const json_t *sk, const char *dir)
{
    const char *name = json_string_value(json_object_get(sk, "name"));
    if (!fit_file_name(name)) {
        hat_errat("skills", 0, "skill name unfit as a directory name");
        return -1;
    }
    if (one_line_items(json_object_get(sk, "rules"), "rule", name)) return -1;
    sbuf s;
    sbuf_init(&s);
    sbuf_puts(&s, "---\n");
    static const char *const keys[] = { "name", "function", "kind", "description", NULL };
    for (size_t i = 0; keys[i]; i++)
        if (json_object_get(sk, keys[i])) fm_put(&s, keys[i], json_object_get(sk, keys[i]));
    static const char *const skip[] = { "name", "function", "kind", "description", "rules", NULL };
    fm_rest(&s, sk, skip);
    sbuf_puts(&s, "---\n");
    size_t k;
    json_t *r;
    json_array_foreach(json_object_get(sk, "rules"), k, r)
        sbuf_printf(&s, "- %s\n", json_string_value(r));
    char *rel = xasprintf("skills/%s/SKILL.md", name);
    int rc = write_text(dir, rel, s.s, s.len);
    free(rel);
    sbuf_free(&s);
    return rc;
}

static json_t *names_of(const json_t *arr, const char *field)
{
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        json_t *n = json_object_get(v, field);
        json_array_append(out, n ? n : json_null());
    }
    return out;
}

static int unique_names(const json_t *arr, const char *field, const char *what)
{
    size_t i, j;
    json_t *a, *b;
    json_array_foreach(arr, i, a) {
        const char *s = json_string_value(json_object_get(a, field));
        if (!json_is_object(a) || !s) {
            hat_errat(what, 0, "element %zu has no string %s", i, field);
            return -1;
        }
        json_array_foreach(arr, j, b) {
            if (j >= i) break;
            if (!strcmp(s, json_string_value(json_object_get(b, field)))) {
                hat_errat(what, 0, "duplicate %s \"%s\"", field, s);
                return -1;
            }
        }
    }
    return 0;
}

int harness_unpack(const json_t *h, const char *dir)
{
    json_t *blocks = blocks_of(h), *skills = json_object_get(h, "skills"),
           *tools = json_object_get(h, "tools");
    if (!json_is_object(h) || unique_names(blocks, "id", "system_prompt.blocks") ||
        unique_names(skills, "name", "skills") || unique_names(tools, "name", "tools"))
        return -1;
    if (mkdir(dir, 0777) && errno != EEXIST) {
        hat_errat(dir, 0, "cannot create directory: %s", strerror(errno));
        return -1;
    }
    json_t *top = json_object();
    static const char *const first[] = { "name", "version", NULL };
    for (size_t i = 0; first[i]; i++)
        if (json_object_get(h, first[i])) json_object_set(top, first[i], json_object_get(h, first[i]));
    json_object_set_new(top, "prompt", names_of(blocks, "id"));
    json_object_set_new(top, "skills", names_of(skills, "name"));
    json_object_set_new(top, "tools", names_of(tools, "name"));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)h, k, v)
        if (strcmp(k, "system_prompt") && strcmp(k, "skills") && strcmp(k, "tools") &&
            !json_object_get(top, k))
            json_object_set(top, k, v);
    int rc = write_json(dir, "harness.json", top);
    json_decref(top);
    size_t i;
    json_array_foreach(blocks, i, v) if (!rc) rc = unpack_block(v, i, dir);
    json_array_foreach(skills, i, v) if (!rc) rc = unpack_skill(v, dir);
    json_array_foreach(tools, i, v) {
        if (rc) break;
        const char *n = json_string_value(json_object_get(v, "name"));
        if (!fit_file_name(n)) {
            hat_errat("tools", 0, "tool name \"%s\" unfit as a file name", n);
            rc = -1;
            break;
        }
        char *rel = xasprintf("tools/%s.json", n);
        rc = write_json(dir, rel, v);
        free(rel);
    }
    return rc;
}

int harness_render(chat_text *t, const json_t *h, const json_t *msgs, const chat_opts *o,
                   char **err)
{
    json_t *all = json_array();
    char *sys = harness_system_text(h);
    json_array_append_new(all, json_pack("{s:s,s:s}", "role", "system", "content", sys));
    free(sys);
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        const char *role = json_string_value(json_object_get(m, "role"));
        if (i == 0 && role && !strcmp(role, "system")) continue;   /* the harness's wins */
        json_array_append(all, m);
    }
    json_t *tools = harness_tools(h);
    chat_opts opt = *o;
    opt.tools = tools;
    int rc = chat_render(t, all, &opt, err);
    json_decref(all);
    json_decref(tools);
    return rc;
}
