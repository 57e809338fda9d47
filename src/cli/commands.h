/* commands.h: the hymt subcommands. Each takes the arguments after its name and returns
 * the process exit code: 0 success, 1 runtime failure (bad model file, I/O), 2 usage error. */
#ifndef HY_CLI_COMMANDS_H
#define HY_CLI_COMMANDS_H

int cmd_generate(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_make_test_model(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_translate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_pull(int argc, char **argv);
int cmd_tm(int argc, char **argv);
int cmd_worker(int argc, char **argv);

#endif
