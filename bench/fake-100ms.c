/*
 * Stand-in for the `ollama` CLI with a model that takes 100 ms, for the throughput benchmark.
 * A compiled program costs ~1 ms to start, where the sh version (sh + cat + sleep) costs 8-15 ms
 * per run on a 2-core VM: that start-up cost is the machine's, not the server's, and would hide
 * what the benchmark is about (does the server keep N slots busy?).
 * `list` answers like the CLI, for the server's installed-model preflight.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "list") == 0) {
    fputs("NAME               ID              SIZE      MODIFIED     \n"
          "llama3.2:latest    a80c4f17acd5    2.0 GB    2 weeks ago    \n", stdout);
    return 0;
  }
  char buffer[65536];
  while (read(0, buffer, sizeof buffer) > 0) {
  } /* the CLI reads stdin to EOF before anything else */
  struct timespec model = {0, 100 * 1000 * 1000};
  nanosleep(&model, NULL);
  fputs("ok\n\n", stdout);
  return 0;
}
