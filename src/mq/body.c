/* A message body kept whole up to a limit, else only its prefix, while its frames arrive. */
#include <stdlib.h>
#include <string.h>
#include "mq/body.h"

int body_acc_start(body_acc_t *a, uint64_t size, size_t limit, size_t prefix)
{
    memset(a, 0, sizeof *a);
    a->size = size;
    a->cut = size > limit;
    a->keep = (size_t)(a->cut ? (size < prefix ? size : prefix) : size);
    if (a->keep > 0 && !(a->buf = malloc(a->keep)))
        return -1;
    return 0;
}

int body_acc_add(body_acc_t *a, const void *bytes, size_t n)
{
    if (n > a->size - a->got)
        return -1;
    size_t room = a->keep - a->kept;
    size_t take = n < room ? n : room;
    if (take > 0) {
        memcpy(a->buf + a->kept, bytes, take);
        a->kept += take;
    }
    a->got += n;
    return 0;
}

bool body_acc_complete(const body_acc_t *a)
{
    return a->got == a->size;
}

void *body_acc_take(body_acc_t *a, size_t *len)
{
    void *buf = a->buf;
    *len = a->kept;
    a->buf = NULL;
    a->keep = a->kept = 0;
    return buf;
}

void body_acc_free(body_acc_t *a)
{
    free(a->buf);
    a->buf = NULL;
    a->keep = a->kept = 0;
}
