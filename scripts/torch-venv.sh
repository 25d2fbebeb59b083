#!/usr/bin/env bash
# Kept for scripts that ask for the torch venv by this name: the one venv is scripts/venv.sh's.
exec bash "$(dirname "$0")/venv.sh" "$@"
