/* Sender checks (executor.worker_identity): who a report or dead letter may come from. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "executor/identity.h"

static mq_delivery_t from(const char *user)
{
    return (mq_delivery_t){.user_id = (char *)user};
}

static void set_mode(ident_mode_t mode)
{
    ident_t id = {.mode = mode};
    snprintf(id.executor_user, sizeof id.executor_user, "warren-executor");
    ident_set(&id);
}

static void shared_mode_checks_nothing(void **state)
{
    (void)state;
    char err[ERRBUF_SIZE];
    set_mode(IDENT_SHARED);
    mq_delivery_t none = from(NULL), other = from("w2");
    assert_false(ident_per_worker());
    assert_int_equal(0, ident_check_worker(&none, "w1", err, sizeof err));
    assert_int_equal(0, ident_check_worker(&other, "w1", err, sizeof err));
    assert_int_equal(0, ident_check_executor(&other, err, sizeof err));
}

static void per_worker_wants_the_named_sender(void **state)
{
    (void)state;
    char err[ERRBUF_SIZE];
    set_mode(IDENT_PER_WORKER);
    mq_delivery_t w1 = from("w1"), w2 = from("w2"), none = from(NULL);
    assert_true(ident_per_worker());
    assert_int_equal(0, ident_check_worker(&w1, "w1", err, sizeof err));
    assert_int_equal(0, ident_check_worker(&w1, NULL, err, sizeof err)); /* names none */
    assert_int_equal(0, ident_check_worker(&w1, "", err, sizeof err));
    assert_int_equal(-1, ident_check_worker(&w2, "w1", err, sizeof err));
    assert_string_equal("sent by broker user 'w2', not by worker 'w1'", err);
    assert_int_equal(-1, ident_check_worker(&none, "w1", err, sizeof err));
    assert_non_null(strstr(err, "no user_id"));
    assert_int_equal(-1, ident_check_worker(&none, NULL, err, sizeof err));
    assert_non_null(strstr(err, "no user_id"));
}

static void per_worker_dead_letters_come_from_the_executor(void **state)
{
    (void)state;
    char err[ERRBUF_SIZE];
    set_mode(IDENT_PER_WORKER);
    mq_delivery_t ex = from("warren-executor"), w1 = from("w1"), none = from(NULL);
    assert_int_equal(0, ident_check_executor(&ex, err, sizeof err));
    assert_int_equal(-1, ident_check_executor(&w1, err, sizeof err));
    assert_string_equal("sent by broker user 'w1', not by the executor 'warren-executor'", err);
    assert_int_equal(-1, ident_check_executor(&none, err, sizeof err));
}

static void url_user(void **state)
{
    (void)state;
    char user[MQ_USER_MAX + 1], small[4];
    assert_int_equal(0, mq_url_user("amqp://w1:secret@host:5672/%2f", user, sizeof user));
    assert_string_equal("w1", user);
    assert_int_equal(0, mq_url_user("amqps://worker%2Done:x@host/v", user, sizeof user));
    assert_string_equal("worker-one", user);
    assert_int_equal(0, mq_url_user("amqp://host/", user, sizeof user));
    assert_string_equal("guest", user);
    assert_int_equal(-1, mq_url_user("http://nope", user, sizeof user));
    assert_int_equal(-1, mq_url_user("amqp://longname:x@host/", small, sizeof small));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shared_mode_checks_nothing),
        cmocka_unit_test(per_worker_wants_the_named_sender),
        cmocka_unit_test(per_worker_dead_letters_come_from_the_executor),
        cmocka_unit_test(url_user),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
