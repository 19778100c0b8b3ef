/* Placeholder for `warren submit` until its module lands (replaced by the owning change). */
#include <stdio.h>
#include "cli/cli.h"

int cmd_submit(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "warren %s: not built yet\n", argv[0]);
    return EXIT_RUNTIME;
}
