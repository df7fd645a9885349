/* judge_filter.c — select trajectories by their verdict ("accuracy=1,
 * effectiveness>=0.5"): the --keep-if of traj-gen. */
#include "judge.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { OP_GE, OP_LE, OP_GT, OP_LT, OP_EQ, OP_NE };
enum { KEY_TOTAL = JUDGE_NCOMP, KEY_PASS };

typedef struct { int key, op; double value; } cond;

struct judge_filter {
    cond  *c;
    size_t n;
};

static int key_of(const char *name, size_t len)
{
    for (int i = 0; i < JUDGE_NCOMP; i++)
        if (strlen(judge_comp_names[i]) == len && !strncmp(judge_comp_names[i], name, len)) return i;
    if (len == 5 && !strncmp(name, "total", 5)) return KEY_TOTAL;
    if (len == 4 && !strncmp(name, "pass", 4)) return KEY_PASS;
    return -1;
}

/* One condition "NAME OP NUMBER", or a bare "pass".  0 or -1 with *err. */
static int parse_cond(const char *s, size_t len, cond *c, char **err)
{
    static const char *const ops[] = { ">=", "<=", ">", "<", "=", "!=" };
    static const int codes[] = { OP_GE, OP_LE, OP_GT, OP_LT, OP_EQ, OP_NE };
    size_t k = 0;
    while (k < len && (s[k] == '_' || (s[k] >= 'a' && s[k] <= 'z'))) k++;
    int key = key_of(s, k);
    if (key < 0) {
        *err = xasprintf("unknown verdict field '%.*s' (components, total or pass)", (int)k, s);
        return -1;
    }
    if (k == len && key == KEY_PASS) { *c = (cond){ KEY_PASS, OP_EQ, 1 }; return 0; }
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
        size_t ol = strlen(ops[o]);
        if (k + ol > len || strncmp(s + k, ops[o], ol)) continue;
        char *num = xstrndup(s + k + ol, len - k - ol), *end;
        double v = strtod(num, &end);
        int ok = *num && !*end && isfinite(v);
        free(num);
        if (!ok) break;
        *c = (cond){ key, codes[o], v };
        return 0;
    }
    *err = xasprintf("cannot read condition '%.*s' (NAME OP NUMBER, OP one of >= <= > < = !=)",
                     (int)len, s);
    return -1;
}

judge_filter *judge_filter_parse(const char *expr, char **err)
{
    judge_filter *f = xcalloc(1, sizeof *f);
    for (const char *p = expr;; ) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        f->c = xrealloc(f->c, (f->n + 1) * sizeof *f->c);
        if (parse_cond(p, len, &f->c[f->n], err)) { judge_filter_free(f); return NULL; }
        f->n++;
        if (!comma) break;
        p = comma + 1;
    }
    return f;
}

int judge_filter_match(const judge_filter *f, const judge_verdict *v)
{
    for (size_t i = 0; i < f->n; i++) {
        const cond *c = &f->c[i];
        double x = c->key == KEY_TOTAL ? v->total : c->key == KEY_PASS ? v->pass : v->score[c->key];
        int ok = c->op == OP_GE ? x >= c->value : c->op == OP_LE ? x <= c->value
               : c->op == OP_GT ? x > c->value  : c->op == OP_LT ? x < c->value
               : c->op == OP_EQ ? fabs(x - c->value) < 1e-9 : fabs(x - c->value) >= 1e-9;
        if (!ok) return 0;
    }
    return 1;
}

void judge_filter_free(judge_filter *f)
{
    if (!f) return;
    free(f->c);
    free(f);
}
