/*
 * The machine's floor for one run of the fake: posix_spawn (glibc: clone(CLONE_VM|CLONE_VFORK), no
 * page-table copy, where libuv forks), the prompt written to a stdin pipe, stdout and stderr read to
 * EOF, waitpid. Compiled and run by bench/overhead.mjs.
 * Usage: spawn-floor N PROMPT BIN [ARG...]   prints one line per spawn: the wall time in ms.
 * Exits 1 (with the reason on stderr) if a run fails or answers nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fputs("usage: spawn-floor N PROMPT BIN [ARG...]\n", stderr);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  int n = atoi(argv[1]);
  const char *prompt = argv[2];
  size_t prompt_len = strlen(prompt);
  char **child_argv = &argv[3];
  char buffer[65536];
  for (int i = 0; i < n; i++) {
    int in[2], out[2], err[2];
    double t0 = now_ms();
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
      perror("pipe2");
      return 1;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    pid_t pid;
    int rc = posix_spawn(&pid, child_argv[0], &actions, NULL, child_argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    close(err[1]);
    if (rc != 0) {
      fprintf(stderr, "posix_spawn %s: %s\n", child_argv[0], strerror(rc));
      return 1;
    }
    size_t written = 0;
    while (written < prompt_len) {
      ssize_t w = write(in[1], prompt + written, prompt_len - written);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      written += (size_t)w;
    }
    close(in[1]);
    struct pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    int open_fds = 2;
    size_t out_bytes = 0;
    while (open_fds > 0) {
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        perror("poll");
        return 1;
      }
      for (int f = 0; f < 2; f++) {
        if (fds[f].fd < 0 || fds[f].revents == 0) continue;
        ssize_t r = read(fds[f].fd, buffer, sizeof buffer);
        if (r > 0) {
          if (f == 0) out_bytes += (size_t)r;
        } else if (r == 0 || errno != EINTR) {
          close(fds[f].fd);
          fds[f].fd = -1;
          open_fds--;
        }
      }
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    double elapsed = now_ms() - t0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || out_bytes == 0) {
      fprintf(stderr, "run %d of %s failed (status %d, %zu bytes of stdout)\n", i, child_argv[0], status, out_bytes);
      return 1;
    }
    printf("%.4f\n", elapsed);
  }
  return 0;
}
