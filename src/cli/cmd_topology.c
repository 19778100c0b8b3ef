/* Placeholder for `warren topology` until its module lands (replaced by the owning change). */
#include <stdio.h>
#include "cli/cli.h"

int cmd_topology(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "warren %s: not built yet\n", argv[0]);
    return EXIT_RUNTIME;
}
