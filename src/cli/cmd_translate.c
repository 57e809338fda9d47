/* cmd_translate.c: placeholder until the command lands. */
#include "cli/commands.h"

#include <stdio.h>

int cmd_translate(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "hymt translate: not built yet\n");
    return 2;
}
