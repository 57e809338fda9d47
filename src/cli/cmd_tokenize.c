/* cmd_tokenize.c: placeholder until the command lands. */
#include "cli/commands.h"

#include <stdio.h>

int cmd_tokenize(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "hymt tokenize: not built yet\n");
    return 2;
}
