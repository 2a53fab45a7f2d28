/*
 * Stand-in for the `ollama` CLI for the benchmarks, compiled by the bench (bench/lib.mjs) twice:
 * MODEL_MS=0 (the added-latency benchmark: the spawn itself is all there is) and MODEL_MS=100
 * (throughput). A compiled program costs ~1 ms to start, where the sh version (sh + cat + sleep)
 * costs 8-15 ms and the node fake 40+ ms on a 2-core VM: that start-up cost is the machine's, not
 * the server's, and its jitter would hide what the benchmarks are about.
 * - `list` answers like the CLI, for the server's installed-model preflight.
 * - `run`: reads stdin to EOF (as the CLI does before anything else), waits MODEL_MS, answers, and
 *   with `--verbose` prints the CLI's timing stats to stderr, so a server that parses them pays for it.
 * - BENCH_FAKE_ARGV=<file>: the first `run` writes its argv there (NUL-separated), so the direct
 *   baselines spawn exactly what the server spawns. Later runs only see the file exists (one failed open).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef MODEL_MS
#define MODEL_MS 100
#endif

static void record_argv(int argc, char **argv) {
  const char *file = getenv("BENCH_FAKE_ARGV");
  if (file == NULL || *file == '\0') return;
  int fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) return;
  for (int i = 1; i < argc; i++) {
    if (write(fd, argv[i], strlen(argv[i]) + 1) < 0) break;
  }
  close(fd);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "list") == 0) {
    fputs("NAME               ID              SIZE      MODIFIED     \n"
          "llama3.2:latest    a80c4f17acd5    2.0 GB    2 weeks ago    \n",
          stdout);
    return 0;
  }
  record_argv(argc, argv);
  int verbose = 0;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--verbose") == 0) verbose = 1;
  char buffer[65536];
  while (read(0, buffer, sizeof buffer) > 0) {
  }
  if (MODEL_MS > 0) {
    struct timespec model = {MODEL_MS / 1000, (MODEL_MS % 1000) * 1000L * 1000L};
    nanosleep(&model, NULL);
  }
  fputs("ok\n\n", stdout);
  fflush(stdout);
  if (verbose) {
    fputs("total duration:       104.217302ms\n"
          "load duration:        1.112085ms\n"
          "prompt eval count:    26 token(s)\n"
          "prompt eval duration: 45.678ms\n"
          "prompt eval rate:     569.20 tokens/s\n"
          "eval count:           2 token(s)\n"
          "eval duration:        23.456ms\n"
          "eval rate:            85.27 tokens/s\n",
          stderr);
  }
  return 0;
}
