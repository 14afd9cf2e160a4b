#!/usr/bin/env bash
# The conformance gate: the shell steps of the composite action beside it (action.yml), as
# one script any CI can run. It needs only python3 (3.11 or newer) on PATH: it makes its own
# venv, installs dw-testing's lean extra there (with Deno when asked), copies the dw-store/1
# shim, runs `dw conformance`, writes the capability matrix and the failures to the job
# summary, and exits with dw conformance's code (0 green, 1 a failure, 4 out of budget).
#
# Settings, from the environment (the action maps its inputs onto them):
#   DW_STORE        the store: an exec: command line, a URI or package.module:factory (required)
#   DW_PROFILE      quick, ci or thorough (default ci)
#   DW_PACKAGES     more pip requirements for the venv, space-separated (your store's own)
#   DW_DENO         true: install Deno into the venv (the deno extra) and put it on PATH
#   DW_SOURCE       what pip installs dw-testing from: its name (default dw-testing, from
#                   PyPI), a checkout's path or a wheel; the action passes its own checkout,
#                   so the gate runs the version your `uses: ...@ref` pins
#   DW_SHIM_DIR     where an exec: store's shim is copied (default vendor: a TypeScript store
#                   imports ./vendor/dw_store_shim.js)
#   DW_OUT          where the report goes (default dw-conformance)
#   DW_WORKERS      pytest-xdist workers (default 2)
#   DW_ARGS         more arguments for pytest, shell words (e.g. -m dw_engine)
#   DW_VENV         the venv (default: dw-venv under RUNNER_TEMP, else under the temp dir)
#   GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, GITHUB_PATH   set by GitHub Actions; optional elsewhere
set -euo pipefail

if [[ -z "${DW_STORE:-}" ]]; then
  echo "gate.sh: set DW_STORE to the store to test, e.g. DW_STORE='exec:deno run -A my_store.ts \$PWD/.store'" >&2
  exit 2
fi
profile="${DW_PROFILE:-ci}"
packages="${DW_PACKAGES:-}"
deno="${DW_DENO:-false}"
source_req="${DW_SOURCE:-dw-testing}"
shim_dir="${DW_SHIM_DIR:-vendor}"
out="${DW_OUT:-dw-conformance}"
workers="${DW_WORKERS:-2}"
venv="${DW_VENV:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/dw-venv}"
# shellcheck disable=SC2206  # DW_ARGS is shell words on purpose
pytest_args=(${DW_ARGS:-})
if [[ -d "$source_req" ]]; then source_req="$(cd "$source_req" && pwd)"; fi

extras="suite"
if [[ "$deno" == "true" ]]; then extras="deno"; fi

echo "::group::install dw-testing[$extras] into $venv"
python3 -m venv "$venv"
# shellcheck disable=SC2086  # DW_PACKAGES is a list of requirements
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  "$source_req[$extras]" $packages
echo "::endgroup::"
export PATH="$venv/bin:$PATH"
if [[ -n "${GITHUB_PATH:-}" ]]; then echo "$venv/bin" >> "$GITHUB_PATH"; fi
if [[ "$deno" == "true" ]]; then deno --version | head -n 1; fi

if [[ "$DW_STORE" == exec:* ]]; then dw store shim-path --copy-to "$shim_dir"; fi
mkdir -p "$out"
report="$out/conformance.json"
if [[ -n "${GITHUB_OUTPUT:-}" ]]; then echo "report-dir=$out" >> "$GITHUB_OUTPUT"; fi

status=0
dw conformance --store "$DW_STORE" --profile "$profile" -n "$workers" --report "$report" \
  --summary "${GITHUB_STEP_SUMMARY:-$out/summary.md}" -- "${pytest_args[@]}" || status=$?
exit "$status"
