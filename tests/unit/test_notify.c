/* Readiness notification: message text, $NOTIFY_SOCKET addresses, and the datagrams a daemon
 * sends over its life, received on a real socket. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>
#include "warren/notify.h"

static void test_format(void **state)
{
    (void)state;
    char buf[64];
    assert_int_equal(notify_format(buf, sizeof buf, "READY=1", "consuming q"), 26);
    assert_string_equal(buf, "READY=1\nSTATUS=consuming q");
    /* a status cannot add an assignment of its own */
    assert_true(notify_format(buf, sizeof buf, "READY=1", "a\nWATCHDOG=trigger") > 0);
    assert_string_equal(buf, "READY=1\nSTATUS=a WATCHDOG=trigger");
    assert_true(notify_format(buf, sizeof buf, "", "waiting") > 0);
    assert_string_equal(buf, "STATUS=waiting");
    assert_true(notify_format(buf, sizeof buf, "STOPPING=1", NULL) > 0);
    assert_string_equal(buf, "STOPPING=1");
    /* too long: refused whole, never cut into a different message */
    assert_int_equal(notify_format(buf, 16, "READY=1", "consuming q"), -1);
    assert_int_equal(notify_format(buf, 8, "READY=1", NULL), 7);
    assert_int_equal(notify_format(buf, 7, "READY=1", NULL), -1);
}

static void test_address(void **state)
{
    (void)state;
    struct sockaddr_un sa;
    unsigned len = 0;
    char why[128];
    assert_int_equal(notify_address("/run/systemd/notify", &sa, &len, why, sizeof why), 0);
    assert_string_equal(sa.sun_path, "/run/systemd/notify");
    assert_int_equal(len,
                     offsetof(struct sockaddr_un, sun_path) + strlen("/run/systemd/notify") + 1);
    /* abstract: a leading NUL, exactly the name's length, no terminator */
    assert_int_equal(notify_address("@warren/x", &sa, &len, why, sizeof why), 0);
    assert_int_equal(sa.sun_path[0], '\0');
    assert_memory_equal(sa.sun_path + 1, "warren/x", 8);
    assert_int_equal(len, offsetof(struct sockaddr_un, sun_path) + 9);
    assert_int_equal(notify_address("run/notify", &sa, &len, why, sizeof why), -1);
    assert_non_null(strstr(why, "absolute"));
    assert_int_equal(notify_address("vsock:2:1234", &sa, &len, why, sizeof why), -1);
    assert_int_equal(notify_address("@", &sa, &len, why, sizeof why), -1);
    assert_int_equal(notify_address("", &sa, &len, why, sizeof why), -1);
    char longest[sizeof sa.sun_path + 2];
    memset(longest, 'a', sizeof longest);
    longest[0] = '/';
    longest[sizeof sa.sun_path - 1] = '\0'; /* 107 bytes and the terminator: fits */
    assert_int_equal(notify_address(longest, &sa, &len, why, sizeof why), 0);
    longest[sizeof sa.sun_path - 1] = 'a';
    longest[sizeof sa.sun_path] = '\0';
    assert_int_equal(notify_address(longest, &sa, &len, why, sizeof why), -1);
    longest[0] = '@'; /* an abstract name has no terminator: 108 bytes fit */
    assert_int_equal(notify_address(longest, &sa, &len, why, sizeof why), 0);
}

/* The next datagram on fd as a string; "" when none is waiting. */
static const char *next_datagram(int fd)
{
    static char buf[2048];
    ssize_t n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
    if (n < 0) {
        assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
        n = 0;
    }
    buf[n] = '\0';
    return buf;
}

static void test_life_of_a_daemon(void **state)
{
    (void)state;
    char dir[] = "/tmp/warren-test-notify-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/notify.sock", dir);
    struct sockaddr_un sa;
    unsigned len;
    char why[128];
    assert_int_equal(notify_address(path, &sa, &len, why, sizeof why), 0);
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);

    char pid[24];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    setenv("NOTIFY_SOCKET", path, 1);
    setenv("WATCHDOG_USEC", "3000000", 1);
    setenv("WATCHDOG_PID", pid, 1);
    notify_init();
    assert_true(notify_enabled());
    assert_int_equal(notify_watchdog_interval_ms(), 1500);
    /* gone from the environment: handlers must not inherit them */
    assert_null(getenv("NOTIFY_SOCKET"));
    assert_null(getenv("WATCHDOG_USEC"));
    assert_null(getenv("WATCHDOG_PID"));

    notify_status("connecting");
    assert_string_equal(next_datagram(fd), "STATUS=connecting");
    notify_reloading(); /* not ready yet: the manager hears no reload */
    assert_string_equal(next_datagram(fd), "");
    notify_reloaded("reloaded");
    assert_string_equal(next_datagram(fd), "STATUS=reloaded");
    notify_ready("running");
    assert_string_equal(next_datagram(fd), "READY=1\nSTATUS=running");
    notify_watchdog();
    assert_string_equal(next_datagram(fd), "WATCHDOG=1");
    notify_reloading();
    const char *m = next_datagram(fd);
    assert_true(!strncmp(m, "RELOADING=1\nMONOTONIC_USEC=", 27));
    assert_non_null(strstr(m, "\nSTATUS="));
    notify_reloaded("reloaded");
    assert_string_equal(next_datagram(fd), "READY=1\nSTATUS=reloaded");
    notify_stopping("draining");
    assert_string_equal(next_datagram(fd), "STOPPING=1\nSTATUS=draining");
    notify_reloading(); /* stopping: no more reloads for the manager */
    assert_string_equal(next_datagram(fd), "");
    notify_reloaded("reloaded");
    assert_string_equal(next_datagram(fd), "STATUS=reloaded");
    notify_close();
    assert_false(notify_enabled());
    notify_ready("after close"); /* nothing, and no crash */
    assert_string_equal(next_datagram(fd), "");
    close(fd);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_address),
        cmocka_unit_test(test_life_of_a_daemon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
