/* Entry point of warren-worker: `warren worker` in a binary without libpq, which `warren worker`
 * execs (cmd_worker.c); run directly, it takes the same options. */
#include "cli/cli.h"

int main(int argc, char **argv)
{
    return cmd_worker(argc, argv);
}
