#!/bin/sh
# Minimal stand-in for the `ollama` CLI (benchmarks only): `run` reads the prompt to EOF and answers "ok".
# `list` answers like the CLI, for the server's installed-model preflight (cached for 30 s by default).
if [ "$1" = list ]; then
  printf 'NAME               ID              SIZE      MODIFIED     \nllama3.2:latest    a80c4f17acd5    2.0 GB    2 weeks ago    \n'
  exit 0
fi
# BENCH_FAKE_ARGV: the first run records its argv, so the direct baselines spawn what the server spawns.
if [ -n "$BENCH_FAKE_ARGV" ] && [ ! -e "$BENCH_FAKE_ARGV" ]; then printf '%s\0' "$@" >"$BENCH_FAKE_ARGV"; fi
cat >/dev/null
printf 'ok\n\n'
