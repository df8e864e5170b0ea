#!/bin/sh
# S15: a shell-script harness run by its absolute path (PATH is never searched for it).
printf 'hello %s\n' "$1"
