/* The CLI's one option parser: values, flags, repeatable options, the operand, usage errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "cli/cli.h"

typedef struct got {
    const char *config, *operand, *status, *workers[8];
    size_t n_workers;
    bool json;
} got_t;

/* Parse the words of args (at most 15) as `warren demo ...`; one operand, ID, is required. */
static int parse(got_t *g, const char *const *args)
{
    char *argv[16] = {"demo"};
    int argc = 1;
    while (args[argc - 1])
        argv[argc] = (char *)args[argc - 1], argc++;
    memset(g, 0, sizeof *g);
    const cli_option_t options[] = {
        {"status", 's', .value = &g->status},
        {"worker", 0, .list = g->workers, .n = &g->n_workers},
        {"json", 'j', .flag = &g->json},
    };
    const cli_spec_t spec = {"demo", "warren demo ID", options, CLI_COUNT(options), "ID"};
    return cli_parse(&spec, argc, argv, &g->config, &g->operand);
}

static void test_options(void **state)
{
    (void)state;
    got_t g;
    assert_int_equal(parse(&g, (const char *[]){"-s", "done", "7", "--json", "-c", "w.conf",
                                                "--worker", "a", "--worker=b", NULL}),
                     0);
    assert_string_equal(g.operand, "7");
    assert_string_equal(g.status, "done");
    assert_string_equal(g.config, "w.conf");
    assert_true(g.json);
    assert_int_equal(g.n_workers, 2);
    assert_string_equal(g.workers[0], "a");
    assert_string_equal(g.workers[1], "b");

    assert_int_equal(parse(&g, (const char *[]){"--status=a", "-sb", "--config", "x", "8", NULL}),
                     0);
    assert_string_equal(g.status, "b"); /* the last one wins */
    assert_string_equal(g.config, "x");
    assert_false(g.json);

    assert_int_equal(parse(&g, (const char *[]){"9", "--", "-j", NULL}), -1); /* an operand */
    assert_int_equal(parse(&g, (const char *[]){"--help", "--bogus", NULL}), 1);
    assert_int_equal(parse(&g, (const char *[]){"-h", NULL}), 1);
}

static void test_usage_errors(void **state)
{
    (void)state;
    got_t g;
    const char *const *const bad[] = {
        (const char *[]){NULL},                                 /* ID missing */
        (const char *[]){"1", "2", NULL},                       /* unexpected argument */
        (const char *[]){"1", "--bogus", NULL},                 /* unknown option */
        (const char *[]){"1", "-x", NULL},                      /* unknown short option */
        (const char *[]){"1", "--status", NULL},                /* needs a value */
        (const char *[]){"1", "-c", NULL},                      /* needs a value */
        (const char *[]){"1", "--json=yes", NULL},              /* a flag takes none */
        (const char *[]){"1", "--stat", "x", "--worker", NULL}, /* needs a value */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (parse(&g, bad[i]) != -1)
            fail_msg("case %zu accepted", i);
}

static void help(FILE *out)
{
    fputs("usage: warren demo ID\n", out);
}

static void test_parsed_exit(void **state)
{
    (void)state;
    assert_int_equal(cli_parsed_exit(1, help), EXIT_OK);
    assert_int_equal(cli_parsed_exit(-1, help), EXIT_USAGE);
    assert_int_equal(cli_parsed_exit(0, help), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_parsed_exit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
