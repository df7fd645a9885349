/* test_ifeval.c — the 25 IFEval checkers on hand-written passing and
 * failing responses (with the original's edge cases), the text machinery
 * (word count, Punkt sentences, word_tokenize, Python string rules), loose
 * variants, kwargs errors, language detection, and general-gen records
 * passing the checkers across seeds with disjoint splits. */
#include "test.h"
#include "general.h"
#include "ifeval.h"
#include "util.h"

/* check_following for id with kwargs JSON on response; -1 on a build error */
static int chk(const char *id, const char *kw, const char *resp)
{
    json_error_t e;
    json_t *k = json_loads(kw, 0, &e);
    char *err = NULL;
    ifeval_instr *in = ifeval_instr_new(id, k, &err);
    json_decref(k);
    if (!in) { free(err); return -1; }
    int r = ifeval_instr_check(in, resp);
    ifeval_instr_free(in);
    return r;
}

static void keywords(void)
{
    CHECK_EQ_INT(chk("keywords:existence", "{\"keywords\":[\"Apple\",\"tree\"]}", "An apple fell from the TREE."), 1);
    CHECK_EQ_INT(chk("keywords:existence", "{\"keywords\":[\"apple\",\"tree\"]}", "An apple fell."), 0);
    /* frequency: "less than" is strict, "at least" inclusive; substrings count */
    const char *r = "Dog dog DOG hotdog";
    CHECK_EQ_INT(chk("keywords:frequency", "{\"keyword\":\" dog \",\"frequency\":4,\"relation\":\"at least\"}", r), 1);
    CHECK_EQ_INT(chk("keywords:frequency", "{\"keyword\":\"dog\",\"frequency\":4,\"relation\":\"less than\"}", r), 0);
    CHECK_EQ_INT(chk("keywords:frequency", "{\"keyword\":\"dog\",\"frequency\":5,\"relation\":\"less than\"}", r), 1);
    /* forbidden words need word boundaries */
    CHECK_EQ_INT(chk("keywords:forbidden_words", "{\"forbidden_words\":[\"cat\"]}", "A category."), 1);
    CHECK_EQ_INT(chk("keywords:forbidden_words", "{\"forbidden_words\":[\"cat\"]}", "My CAT."), 0);
    CHECK_EQ_INT(chk("keywords:letter_frequency", "{\"letter\":\"A\",\"let_frequency\":3,\"let_relation\":\"at least\"}", "banana"), 1);
    CHECK_EQ_INT(chk("keywords:letter_frequency", "{\"letter\":\"a\",\"let_frequency\":3,\"let_relation\":\"less than\"}", "bAnana"), 0);
}

static void length(void)
{
    const char *r3 = "Mr. Smith went to Washington. He arrived at 5 p.m. on Monday. It rained!";
    CHECK_EQ_INT(ifeval_count_sentences(r3), 3);
    CHECK_EQ_INT(ifeval_count_sentences("Hello world"), 1);
    CHECK_EQ_INT(ifeval_count_sentences(""), 0);
    CHECK_EQ_INT(chk("length_constraints:number_sentences", "{\"num_sentences\":3,\"relation\":\"at least\"}", r3), 1);
    CHECK_EQ_INT(chk("length_constraints:number_sentences", "{\"num_sentences\":3,\"relation\":\"less than\"}", r3), 0);
    CHECK_EQ_INT(ifeval_count_words("Don't stop-me now, 3.5 times_two! naïve"), 9);
    CHECK_EQ_INT(chk("length_constraints:number_words", "{\"num_words\":3,\"relation\":\"less than\"}", "one two"), 1);
    CHECK_EQ_INT(chk("length_constraints:number_words", "{\"num_words\":3,\"relation\":\"at least\"}", "one two"), 0);
    /* paragraphs by ***: empty first/last pieces are dropped, empty middle fails */
    CHECK_EQ_INT(chk("length_constraints:number_paragraphs", "{\"num_paragraphs\":2}", "A\n***\nB\n***"), 1);
    CHECK_EQ_INT(chk("length_constraints:number_paragraphs", "{\"num_paragraphs\":2}", "A\n***\n***\nB"), 0);
    const char *np = "\"Hello,\" she said.\n\nsecond one\n\nthird";
    CHECK_EQ_INT(chk("length_constraints:nth_paragraph_first_word", "{\"num_paragraphs\":3,\"nth_paragraph\":1,\"first_word\":\"HELLO\"}", np), 1);
    CHECK_EQ_INT(chk("length_constraints:nth_paragraph_first_word", "{\"num_paragraphs\":3,\"nth_paragraph\":2,\"first_word\":\"second\"}", np), 1);
    CHECK_EQ_INT(chk("length_constraints:nth_paragraph_first_word", "{\"num_paragraphs\":2,\"nth_paragraph\":2,\"first_word\":\"second\"}", np), 0);
}

static void content_and_format(void)
{
    CHECK_EQ_INT(chk("detectable_content:number_placeholders", "{\"num_placeholders\":2}", "[a] and [b]"), 1);
    CHECK_EQ_INT(chk("detectable_content:number_placeholders", "{\"num_placeholders\":2}", "[a and b]"), 0);
    CHECK_EQ_INT(chk("detectable_content:postscript", "{\"postscript_marker\":\"P.S.\"}", "Hi.\np. s. later"), 1);
    CHECK_EQ_INT(chk("detectable_content:postscript", "{\"postscript_marker\":\"P.P.S\"}", "Hi.\nP.S. later"), 0);
    CHECK_EQ_INT(chk("detectable_content:postscript", "{\"postscript_marker\":\"P.P.S\"}", "Hi.\nP. P. S later"), 1);
    /* bullets: "* " and "-" lines count, "**bold**" lines do not */
    CHECK_EQ_INT(chk("detectable_format:number_bullet_lists", "{\"num_bullets\":2}", "* a\n- b\n**c**"), 1);
    CHECK_EQ_INT(chk("detectable_format:number_bullet_lists", "{\"num_bullets\":2}", "* a\n* b\n* c"), 0);
    CHECK_EQ_INT(chk("detectable_format:constrained_response", "{}", "  I think My answer is maybe. "), 1);
    CHECK_EQ_INT(chk("detectable_format:constrained_response", "{}", "My answer is Yes."), 0);
    CHECK_EQ_INT(chk("detectable_format:number_highlighted_sections", "{\"num_highlights\":2}", "*x* and **y**"), 1);
    CHECK_EQ_INT(chk("detectable_format:number_highlighted_sections", "{\"num_highlights\":2}", "* * and *x*"), 0);
    CHECK_EQ_INT(chk("detectable_format:multiple_sections", "{\"section_spliter\":\"Section\",\"num_sections\":2}", "Section 1\na\nSection 2\nb"), 1);
    CHECK_EQ_INT(chk("detectable_format:multiple_sections", "{\"section_spliter\":\"SECTION\",\"num_sections\":2}", "Section 1\na\nSection 2\nb"), 0);
    CHECK_EQ_INT(chk("detectable_format:json_format", "{}", "```json\n{\"a\": [1, 2]}\n```"), 1);
    CHECK_EQ_INT(chk("detectable_format:json_format", "{}", "Here: {\"a\": 1}"), 0);
    CHECK_EQ_INT(chk("detectable_format:title", "{}", "<<My Title>>\ntext"), 1);
    CHECK_EQ_INT(chk("detectable_format:title", "{}", "<<  >> and <<a\nb>>"), 0);
}

static void combination_startend_case(void)
{
    CHECK_EQ_INT(chk("combination:two_responses", "{}", "one\n******\ntwo"), 1);
    CHECK_EQ_INT(chk("combination:two_responses", "{}", "same\n******\nsame "), 0);
    CHECK_EQ_INT(chk("combination:repeat_prompt", "{\"prompt_to_repeat\":\"Say Hi.\"}", "  say hi. Hi!"), 1);
    CHECK_EQ_INT(chk("combination:repeat_prompt", "{\"prompt_to_repeat\":\"Say Hi.\"}", "Sure. Say hi."), 0);
    CHECK_EQ_INT(chk("startend:end_checker", "{\"end_phrase\":\"Any other questions?\"}", "Done. any other questions?\""), 1);
    CHECK_EQ_INT(chk("startend:end_checker", "{\"end_phrase\":\"Any other questions?\"}", "Any other questions? Bye."), 0);
    CHECK_EQ_INT(chk("startend:quotation", "{}", " \"quoted\" "), 1);
    CHECK_EQ_INT(chk("startend:quotation", "{}", "\""), 0);
    CHECK_EQ_INT(chk("change_case:english_capital", "{}", "THE RIVER WAS CALM TODAY."), 1);
    CHECK_EQ_INT(chk("change_case:english_capital", "{}", "THE RIVER was calm."), 0);
    CHECK_EQ_INT(chk("change_case:english_lowercase", "{}", "the river was calm and the boats drifted past."), 1);
    CHECK_EQ_INT(chk("change_case:english_lowercase", "{}", "das ist eine kurze antwort und wir gehen heute auf den markt."), 0);
    /* word_tokenize splits DON'T into DO + N'T: both count as capital words */
    CHECK_EQ_INT(chk("change_case:capital_word_frequency", "{\"capital_frequency\":3,\"capital_relation\":\"at least\"}", "I DON'T know."), 1);
    CHECK_EQ_INT(chk("change_case:capital_word_frequency", "{\"capital_frequency\":3,\"capital_relation\":\"less than\"}", "I DON'T know."), 0);
    CHECK_EQ_INT(chk("punctuation:no_comma", "{}", "no commas here"), 1);
    CHECK_EQ_INT(chk("punctuation:no_comma", "{}", "a, b"), 0);
}

static void language(void)
{
    CHECK_EQ_INT(chk("language:response_language", "{\"language\":\"hi\"}", "यह एक छोटा सा उत्तर है। हम आज बाजार जाएंगे।"), 1);
    CHECK_EQ_INT(chk("language:response_language", "{\"language\":\"mr\"}", "हे एक छोटे उत्तर आहे. आम्ही आज बाजारात जाणार आहोत."), 1);
    CHECK_EQ_INT(chk("language:response_language", "{\"language\":\"fa\"}", "The report lists three reasons for the delay."), 0);
    /* no letters at all: langdetect raises and the original counts it followed */
    CHECK_EQ_INT(chk("language:response_language", "{\"language\":\"de\"}", "1234 !!!"), 1);
    CHECK_STR(ifeval_detect_language("Das ist eine kurze Antwort. Wir gehen heute auf den Markt."), "de");
    CHECK_STR(ifeval_detect_language("Это короткий ответ. Сегодня мы пойдём на рынок."), "ru");
    CHECK_STR(ifeval_detect_language("Това е кратък отговор. Днес ще отидем на пазара."), "bg");
}

static void python_rules(void)
{
    CHECK(ifeval_isupper("ABC 1!", 6));
    CHECK(!ifeval_isupper("123", 3));
    CHECK(ifeval_islower("é a", 4));
    char *s = ifeval_strip("\xc2\xa0 x \x1f", 6);   /* NBSP and U+001F are Python spaces */
    CHECK_STR(s, "x");
    free(s);
    long n;
    char **t = ifeval_word_tokenize("\"Hello,\" he said. Can't stop!", &n);
    CHECK_EQ_INT(n, 11);
    if (n == 11) { CHECK_STR(t[0], "``"); CHECK_STR(t[7], "Ca"); CHECK_STR(t[8], "n't"); }
    ifeval_strv_free(t);
    char *v[8];
    ifeval_loose_variants("Sure:\n*a*\nbye", v);
    CHECK_STR(v[1], "Sure:\na\nbye");
    CHECK_STR(v[2], "*a*\nbye");
    CHECK_STR(v[4], "*a*");
    CHECK_STR(v[7], "a");
    for (int i = 0; i < 8; i++) free(v[i]);
}

static void bad_kwargs(void)
{
    char *err = NULL;
    json_t *k = json_loads("{\"num_words\":10}", 0, NULL);
    CHECK(!ifeval_instr_new("length_constraints:number_words", k, &err));
    CHECK(err && strstr(err, "missing argument \"relation\""));
    free(err); err = NULL;
    CHECK(!ifeval_instr_new("no:such_thing", k, &err));
    CHECK(err && strstr(err, "unknown instruction id"));
    free(err); err = NULL;
    CHECK(!ifeval_instr_new("punctuation:no_comma", k, &err));
    CHECK(err && strstr(err, "unknown argument \"num_words\""));
    free(err);
    json_decref(k);
    CHECK_EQ_INT(chk("length_constraints:number_words", "{\"num_words\":3,\"relation\":\"at most\"}", "x"), -1);
    /* nulls are ignored, as the HF copies of IFEval write them */
    CHECK_EQ_INT(chk("punctuation:no_comma", "{\"num_words\":null}", "x"), 1);
}

static void strict_and_loose(void)
{
    json_t *ids = json_loads("[\"punctuation:no_comma\",\"startend:quotation\"]", 0, NULL);
    json_t *kw = json_loads("[{},{}]", 0, NULL);
    ifeval_verdict v;
    char *err = NULL;
    CHECK_EQ_INT(ifeval_score(ids, kw, "Sure, here it is:\n\"quoted text\"", &v, &err), 0);
    CHECK_EQ_INT(v.strict[0], 0); CHECK_EQ_INT(v.strict[1], 0);
    CHECK_EQ_INT(v.loose[0], 1);  CHECK_EQ_INT(v.loose[1], 1);
    ifeval_verdict_free(&v);
    CHECK_EQ_INT(ifeval_score(ids, kw, "   ", &v, &err), 0);   /* blank fails all */
    CHECK_EQ_INT(v.strict[0], 0); CHECK_EQ_INT(v.loose[0], 0);
    ifeval_verdict_free(&v);
    json_decref(ids);
    json_decref(kw);
}

static void general_records_pass(void)
{
    char *err = NULL;
    general_gen *g = general_load(NULL, &err);
    CHECK(g);
    if (!g) { fprintf(stderr, "  %s\n", err); free(err); return; }
    long total = 0, failed = 0, dropped = 0, with_constraints = 0;
    json_t *prompts[3] = { json_object(), json_object(), json_object() };
    for (uint64_t seed = 1; seed <= 3; seed++)
        for (int split = 0; split < 3; split++)
            for (long i = 0; i < 60; i++) {
                int re;
                json_t *rec = general_make(g, split, seed, i, 20, &re);
                if (!rec) { dropped++; continue; }
                total++;
                json_t *ids = json_object_get(rec, "instruction_id_list");
                with_constraints += json_array_size(ids) > 0;
                json_t *msgs = json_object_get(rec, "messages");
                const char *resp = json_string_value(json_object_get(json_array_get(msgs, 1), "content"));
                ifeval_verdict v;
                if (ifeval_score(ids, json_object_get(rec, "kwargs"), resp, &v, &err)) { failed++; free(err); }
                else {
                    for (int k = 0; k < v.n; k++) failed += !v.strict[k];
                    ifeval_verdict_free(&v);
                }
                /* the task part of the prompt: up to the first ". " or "? " */
                const char *p = json_string_value(json_object_get(rec, "prompt"));
                json_object_set_new(prompts[split], p, json_true());
                json_decref(rec);
            }
    CHECK_EQ_INT(failed, 0);
    CHECK(dropped * 100 <= total);
    CHECK(with_constraints * 2 > total);
    /* same seed, same record */
    int re;
    json_t *a = general_make(g, 1, 7, 5, 20, &re), *b = general_make(g, 1, 7, 5, 20, &re);
    CHECK(a && b && json_equal(a, b));
    json_decref(a);
    json_decref(b);
    /* splits share no prompt */
    const char *k;
    json_t *val;
    long shared = 0;
    json_object_foreach(prompts[0], k, val) shared += json_object_get(prompts[1], k) || json_object_get(prompts[2], k);
    json_object_foreach(prompts[1], k, val) shared += json_object_get(prompts[2], k) != NULL;
    CHECK_EQ_INT(shared, 0);
    for (int s = 0; s < 3; s++) json_decref(prompts[s]);
    general_free(g);
}

int main(void)
{
    RUN(keywords);
    RUN(length);
    RUN(content_and_format);
    RUN(combination_startend_case);
    RUN(language);
    RUN(python_rules);
    RUN(bad_kwargs);
    RUN(strict_and_loose);
    RUN(general_records_pass);
    TEST_MAIN_END();
}
