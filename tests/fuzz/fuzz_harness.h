/* fuzz_harness.h — what the three harness targets do with a harness that
 * loaded: every consumer a user's harness edit reaches (system text, tool
 * list, skill texts, lint, diff, rendering a conversation, canonical
 * order) must cope with whatever the loader let through.  Invariant: a
 * harness differs from itself in nothing. */
#ifndef HAT_FUZZ_HARNESS_H
#define HAT_FUZZ_HARNESS_H

#include "fuzz.h"
#include "harness.h"

/* Load from path; exercise the result.  Problems are collected, not printed. */
static inline void fuzz_harness_path(const char *path)
{
    json_t *problems = json_array(), *origins = NULL;
    json_t *h = harness_load_problems(path, &origins, problems);
    size_t i;
    json_t *p;
    json_array_foreach(problems, i, p)
        FUZZ_ASSERT(json_is_string(json_object_get(p, "message")));
    json_decref(problems);
    if (h) {
        free(harness_system_text(h));
        json_decref(harness_tools(h));
        json_t *skills = json_object_get(h, "skills");
        json_t *s;
        json_array_foreach(skills, i, s) free(harness_skill_text(h, s));
        json_t *blocks = json_object_get(json_object_get(h, "system_prompt"), "blocks");
        json_array_foreach(blocks, i, s) free(harness_block_text(h, s));
        json_decref(harness_lint(h, origins));
        json_t *d = harness_diff(h, h);
        FUZZ_ASSERT(json_is_array(d) && json_array_size(d) == 0);
        json_decref(d);
        json_t *msgs = json_pack("[{s:s,s:s}]", "role", "user", "content", "how much?");
        chat_opts o = CHAT_OPTS_INIT;
        chat_text t;
        char *err = NULL;
        if (harness_render(&t, h, msgs, &o, &err) == 0) chat_text_free(&t);
        free(err);
        json_decref(msgs);
        (void)harness_loader_name(h);
        (void)harness_loader_argument(h);
        json_t *c = json_deep_copy(h);
        harness_canonicalize(c);
        json_decref(c);
    }
    json_decref(h);
    json_decref(origins);
}

#endif
