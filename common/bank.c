/* bank.c — loading phrasing banks and filling their {slot} templates. */
#include "bank.h"
#include "jsonl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static json_t *check_bank(json_t *b, const char *name)
{
    if (!json_is_object(b)) {
        hat_errat(name, 0, "not a phrasing bank: expected a JSON object of template lists");
        json_decref(b);
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach(b, k, v) {
        if (!strncmp(k, "note", 4)) continue;
        size_t i, n = json_array_size(v);
        json_t *t;
        int ok = json_is_array(v) && n > 0;
        json_array_foreach(v, i, t) ok &= json_is_string(t);
        if (!ok) {
            hat_errat(name, 0, "bank key \"%s\": expected a non-empty array of strings", k);
            json_decref(b);
            return NULL;
        }
    }
    return b;
}

json_t *bank_load_path(const char *path)
{
    json_t *b = json_load_path(path);
    return b ? check_bank(b, path) : NULL;
}

json_t *bank_load(const char *name)
{
    char *p = hat_data_path(name);
    if (!p) {
        hat_errat(name, 0, "data file not found (set HAT_DATA)");
        return NULL;
    }
    json_t *b = bank_load_path(p);
    free(p);
    return b;
}

const json_t *bank_list(const json_t *bank, const char *key)
{
    const json_t *l = json_object_get(bank, key);
    return json_is_array(l) && json_array_size(l) ? l : NULL;
}

const char *bank_pick(const json_t *bank, const char *key, rng_t *r)
{
    const json_t *l = bank_list(bank, key);
    return l ? json_string_value(json_array_get(l, rng_below(r, json_array_size(l)))) : NULL;
}

/* Count tmpl's forms; with out, also append form k of the n there are
 * (mixed radix, the first group the most significant digit). */
static long groups(const char *tmpl, long k, long n_forms, sbuf *out)
{
    long n = 1, rest = n_forms;
    for (const char *s = tmpl; *s; ) {
        if ((s[0] == '[' && s[1] == '[') || (s[0] == ']' && s[1] == ']')) {
            if (out) sbuf_putc(out, s[0]);
            s += 2;
            continue;
        }
        if (*s == ']') return -1;
        if (*s != '[') { if (out) sbuf_putc(out, *s); s++; continue; }
        const char *e = s + 1;
        long m = 1;
        for (; *e && *e != ']'; e++) {
            if (*e == '[') return -1;
            m += *e == '|';
        }
        if (!*e) return -1;
        if (n > BANK_MAX_FORMS / m) return -1;
        n *= m;
        if (out) {                         /* digit of k in this group's radix */
            rest /= m;
            long c = k / rest % m;
            const char *a = s + 1;
            for (; c; a++) c -= *a == '|';
            const char *b = a;
            while (*b != '|' && *b != ']') b++;
            sbuf_add(out, a, (size_t)(b - a));
        }
        s = e + 1;
    }
    return n;
}

long bank_forms(const char *tmpl)
{
    long n = groups(tmpl, 0, 0, NULL);
    return n < 0 ? 0 : n;
}

int bank_form(sbuf *out, const char *tmpl, long k)
{
    long n = bank_forms(tmpl);
    if (!n || k < 0 || k >= n) return -1;
    size_t mark = out->len;
    if (groups(tmpl, k, n, out) < 0) {
        out->len = mark;
        if (out->s) out->s[mark] = 0;
        return -1;
    }
    return 0;
}

int bank_choose(sbuf *out, const char *tmpl, rng_t *r)
{
    long n = bank_forms(tmpl);
    if (!n) return -1;
    return bank_form(out, tmpl, n > 1 ? (long)rng_below(r, (uint64_t)n) : 0);
}

void bank_number(sbuf *out, double v)
{
    if (fabs(v - round(v)) < 1e-9 && fabs(v) < 1e15) {
        sbuf_printf(out, "%lld", (long long)llround(v));
        return;
    }
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {      /* shortest that reads back */
        snprintf(buf, sizeof buf, "%.*f", prec, v);
        if (strtod(buf, NULL) == v || prec == 17) break;
        if (prec >= 2 && fabs(strtod(buf, NULL) - v) < 1e-9) break;
    }
    sbuf_puts(out, buf);
}

int bank_fill(sbuf *out, const char *tmpl, const json_t *vars)
{
    size_t mark = out->len;
    const char *s = tmpl;
    while (*s) {
        const char *b = strpbrk(s, "{}");
        if (!b) { sbuf_puts(out, s); break; }
        sbuf_add(out, s, (size_t)(b - s));
        if (b[0] == b[1]) { sbuf_putc(out, b[0]); s = b + 2; continue; }   /* {{ or }} */
        const char *e = b[0] == '{' ? strchr(b + 1, '}') : NULL;
        if (!e) { sbuf_putc(out, b[0]); s = b + 1; continue; }
        char key[64];
        size_t kn = (size_t)(e - b - 1);
        if (kn == 0 || kn >= sizeof key) { sbuf_add(out, b, (size_t)(e - b + 1)); s = e + 1; continue; }
        memcpy(key, b + 1, kn);
        key[kn] = 0;
        const json_t *v = json_object_get(vars, key);
        if (json_is_string(v)) sbuf_puts(out, json_string_value(v));
        else if (json_is_number(v)) bank_number(out, json_number_value(v));
        else {
            out->len = mark;
            if (out->s) out->s[mark] = 0;
            return -1;
        }
        s = e + 1;
    }
    return 0;
}
