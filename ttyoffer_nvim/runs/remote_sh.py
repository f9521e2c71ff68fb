"""The far side of a remote session: the POSIX sh that each action runs there.

Nothing is installed on the other machine: every command carries its whole
script (remote.remote_line). Each action starts with the same preamble (the
folder, checked; the tools, found; how a session's state is read) and then
does one job: run (attach, make, or tell the ending of one that ended while
away), list, kill, signal, check.

A session's truth is its processes there: the wrapper (the program's
parent) writes its own pid, script(1)'s (its parent) and dtach's master's
(script's parent) into NAME.pid. A session runs while its wrapper runs and
has written no ending; it can be reached while script and the master run
too. When either of those is killed, the program's terminal is gone: the
wrapper's watcher hangs the program up, as a terminal's programs are when it
closes, and a program that dies of it has its ending written like any other.
One that ignores the hang-up runs on, listed as unreachable, until killed.
"""

from __future__ import annotations

import re
import shlex

from . import rules

# Inside the session: script(1) runs `exec /bin/sh -c "$TTYOFFER_WRAPPER"
# ttyoffer-session`, and the program's argv comes in TTYOFFER_ARGV (shlex
# words): script writes its command line into the recording's first line,
# so neither the wrapper nor the program's arguments may be on it. The
# wrapper is the program's parent, so that how the program ended is known
# and written down. The signals a terminal or a kill of the session sends
# are caught with a no-op (a caught signal is the default again in the
# program) so the ending is written whatever the program dies of. sh tells a
# death by signal N as 128+N, as ssh would. A background watcher keeps the
# recording bounded (past RECORDING_BYTES/2 its copy goes to NAME.log.1 and
# NAME.log starts again; script appends, -a) and hangs the program up once
# its terminal is gone.
REMOTE_WRAPPER = r"""
umask 077
d=$TTYOFFER_FOLDER n=$TTYOFFER_NAME
SHELL=${TTYOFFER_SHELL:-/bin/sh}
export SHELL
eval "set -- $TTYOFFER_ARGV"
unset TTYOFFER_FOLDER TTYOFFER_NAME TTYOFFER_SHELL TTYOFFER_ARGV TTYOFFER_WRAPPER
log=$d/$n.log
script_pid=$PPID
master_pid=$(ps -o ppid= -p "$script_pid" 2>/dev/null | tr -d ' ')
case $master_pid in '' | *[!0-9]*) master_pid=0 ;; esac
printf '%s %s %s\n' "$$" "$script_pid" "$master_pid" > "$d/$n.pid"
(
  trap '' HUP INT QUIT TERM USR1 USR2 ALRM
  tick=0
  # A process killed stays a zombie until its parent reaps it (dtach's
  # master is its first client's child, and not every init reaps).
  runs() {
    kill -0 "$1" 2>/dev/null || return 1
    case $(ps -o stat= -p "$1" 2>/dev/null) in Z*) return 1 ;; esac
  }
  while kill -0 "$$" 2>/dev/null && [ -f "$d/$n.pid" ]; do
    sleep 1
    if ! runs "$script_pid" || { [ "$master_pid" -gt 0 ] && ! runs "$master_pid"; }; then
      kill -s HUP -- "-$$" 2>/dev/null
      break
    fi
    tick=$((tick + 1))
    [ $((tick % 5)) -eq 0 ] || continue
    size=$(wc -c < "$log" 2>/dev/null) || break
    if [ "${size:-0}" -gt __RECORDING_HALF__ ]; then
      cp "$log" "$log.1.new" && mv -f "$log.1.new" "$log.1" && : > "$log"
    fi
  done
) < /dev/null > /dev/null 2>&1 &
trap : HUP INT QUIT TERM USR1 USR2 ALRM
[ $# -gt 0 ] || set -- "$SHELL" -l
"$@"
code=$?
signal=0 reason=exited
if [ "$code" -eq 127 ] && ! command -v "$1" > /dev/null 2>&1; then
  reason=not_found
elif [ "$code" -eq 126 ]; then
  reason=not_executable
elif [ "$code" -gt 128 ] && [ "$code" -lt 192 ]; then
  signal=$((code - 128)) reason=signal
fi
printf '%s %s %s %s\n' "$code" "$signal" "$reason" "$(date +%s)" > "$d/$n.status.$$"
mv -f "$d/$n.status.$$" "$d/$n.status"
exit "$code"
"""

# What script(1) runs: a line with nothing of the user's on it (script
# writes it into the recording).
SCRIPT_COMMAND = 'exec /bin/sh -c "$TTYOFFER_WRAPPER" ttyoffer-session'

# What every action starts with: the folder, checked; the tools, found.
_PREAMBLE = r"""
umask 077
nonce=__NONCE__
mark() { printf '\033_ttyoffer-%s;%s\033\\' "$nonce" "$1"; }
say() { printf '(ttyoffer) %s\r\n' "$1"; }
here=$(uname -n 2>/dev/null || echo 'this host')
if [ -n "${XDG_RUNTIME_DIR:-}" ] && [ -d "$XDG_RUNTIME_DIR" ] && [ ! -L "$XDG_RUNTIME_DIR" ]; then
  d=$XDG_RUNTIME_DIR/ttyoffer-remote
else
  d=/tmp/ttyoffer-remote-$(id -u)
fi
mkdir -m 700 "$d" 2>/dev/null
problem=
if [ -L "$d" ] || [ ! -d "$d" ]; then
  problem="$d is not a folder of yours on $here; remove it and try again"
else
  owner=$(ls -ldn "$d" | awk '{ print $1 " " $3 }')
  case $owner in
    "drwx------ $(id -u)" | "drwx------. $(id -u)") ;;
    *) problem="$d on $here is not yours alone ($owner); remove it and try again" ;;
  esac
fi
missing=
command -v dtach > /dev/null 2>&1 || missing=dtach
command -v script > /dev/null 2>&1 || missing="${missing:+$missing and }script"
paths_of() {
  sock=$d/$1.sock log=$d/$1.log status=$d/$1.status pidfile=$d/$1.pid
}
alive() {
  # Its ending written: over, though its wrapper may be on its way out.
  [ ! -e "$status" ] || return 1
  [ -f "$pidfile" ] && [ ! -L "$pidfile" ] || return 1
  read -r pid script_pid master_pid < "$pidfile" || return 1
  case $pid$script_pid$master_pid in '' | *[!0-9]*) return 1 ;; esac
  kill -0 "$pid" 2>/dev/null
}
runs() {
  # A killed process stays a zombie until its parent reaps it.
  kill -0 "$1" 2>/dev/null || return 1
  case $(ps -o stat= -p "$1" 2>/dev/null) in Z*) return 1 ;; esac
}
reachable() {
  # After alive: its terminal (script's) and dtach's master still run.
  [ -S "$sock" ] && runs "$script_pid" && { [ "$master_pid" -eq 0 ] || runs "$master_pid"; }
}
forget() {
  rm -f "$sock" "$log" "$log.1" "$log.1.new" "$status" "$pidfile"
}
"""

_RUN = r"""
name=__NAME__
if [ -n "$problem" ]; then say "$problem"; mark 'end;127;0;cannot_start'; exit 127; fi
if [ -n "$missing" ]; then
  say "$missing not found on $here: persistent runs there need dtach and script(1)."
  say "Install them there: __INSTALL__"
  mark 'end;127;0;cannot_start'
  exit 127
fi
paths_of "$name"
replay() {
  # What the program printed: script's own first line (its header) and
  # last (its footer) are not.
  [ -f "$log" ] && [ ! -L "$log" ] || return 0
  printf '\033[?1049l\033[?1000l\033[?1002l\033[?1003l\033[?1006l\033c'
  size=$(cat "$log.1" "$log" 2>/dev/null | wc -c)
  if [ "$size" -gt 262144 ]; then
    cat "$log.1" "$log" 2>/dev/null | tail -c 262144 | sed 1d
  else
    cat "$log.1" "$log" 2>/dev/null
  fi | LC_ALL=C sed -e '1{/^Script started on .*\[COMMAND=/d;}' \
    -e '${/^Script done on .*\[COMMAND_EXIT_CODE=/d;}'
}
ending() {
  if [ -f "$status" ] && [ ! -L "$status" ] && read -r code signal reason ended < "$status"; then
    case $code$signal in *[!0-9]* | '') code=255 signal=0 ;; esac
    case $reason in exited | signal | not_found | not_executable | cannot_start) ;; *) reason=exited ;; esac
  else
    code=255 signal=0 reason=gone
  fi
  forget
  mark "end;$code;$signal;$reason"
  exit "$code"
}
unreachable() {
  say "session $name on $here runs, but its terminal is gone (its dtach or script was killed)"
  mark 'end;129;1;unreachable'
  exit 129
}
if alive; then
  reachable || { replay; unreachable; }
  [ $# -eq 0 ] ||
    say "session $name on $here is running already: attached to it; the command given was not run"
  replay
  mark attach
  dtach -a "$sock" -r winch -E -z
elif [ -f "$status" ] && [ $# -eq 0 ]; then
  replay
  ending
else
  forget
  if [ $# -gt 0 ] && ! command -v "$1" > /dev/null 2>&1; then
    say "$1: not found on $here"
    mark 'end;127;0;not_found'
    exit 127
  fi
  : > "$log"
  mark attach
  TTYOFFER_FOLDER=$d TTYOFFER_NAME=$name TTYOFFER_SHELL=${SHELL:-/bin/sh} SHELL=/bin/sh \
    TTYOFFER_WRAPPER=__WRAPPER__ TTYOFFER_ARGV=__ARGV__ \
    dtach -A "$sock" -r winch -E -z script -q -f -e -a -c __SCRIPT_COMMAND__ "$log"
fi
# The client has ended. A terminal that went (script or the master killed)
# ends the program within a second or two (the watcher): its ending is
# waited for a moment rather than telling a detach that is none.
tries=0
while [ ! -f "$status" ] && alive && ! reachable && [ $tries -lt 40 ]; do
  sleep 0.1 2>/dev/null || sleep 1
  tries=$((tries + 1))
done
[ -f "$status" ] && ending
if alive; then
  reachable || unreachable
  mark 'end;129;1;detached'
  exit 129
fi
ending
"""

# One line per session: NAME TAB CREATED TAB CODE SIGNAL REASON (the last
# three empty while it runs) TAB STATE (running, unreachable or ended).
# Sessions gone with no ending leave no trace.
_LIST = r"""
if [ -n "$problem" ]; then printf 'error\t%s\n' "$problem"; exit 0; fi
seen=' '
for entry in "$d"/*.sock "$d"/*.pid "$d"/*.status; do
  [ -e "$entry" ] || continue
  base=${entry##*/}
  n=${base%.*}
  case $n in '' | -* | *- | *[!__NAME_CHARACTERS__]*) continue ;; esac
  [ ${#n} -le __NAME_LENGTH__ ] || continue
  case $seen in *" $n "*) continue ;; esac
  seen="$seen$n "
  paths_of "$n"
  if alive; then
    created=$(date -r "$pidfile" +%s 2>/dev/null || echo 0)
    state=running
    reachable || state=unreachable
    printf 'session\t%s\t%s\t\t\t\t%s\n' "$n" "$created" "$state"
  elif [ -f "$status" ] && read -r code signal reason ended < "$status"; then
    printf 'session\t%s\t%s\t%s\t%s\t%s\tended\n' "$n" "${ended:-0}" "$code" "$signal" "$reason"
  elif [ -S "$sock" ] && [ ! -e "$pidfile" ] &&
    made=$(date -r "$sock" +%s 2>/dev/null) && [ $(($(date +%s) - made)) -lt 30 ]; then
    : # being made: dtach has bound the socket, its wrapper not yet written its pid
  else
    forget
  fi
done
"""

_KILL = r"""
name=__NAME__
if [ -n "$problem" ]; then printf 'error\t%s\n' "$problem"; exit 0; fi
paths_of "$name"
if alive; then
  kill -s HUP -- "-$pid" 2>/dev/null
  kill -s TERM -- "-$pid" 2>/dev/null
  tries=0
  while kill -0 "$pid" 2>/dev/null && [ $tries -lt 10 ]; do
    sleep 0.1 2>/dev/null || sleep 1
    tries=$((tries + 1))
  done
  kill -s KILL -- "-$pid" 2>/dev/null
  forget
  printf 'killed\t%s\n' "$name"
else
  [ -e "$sock" ] || [ -e "$status" ] || [ -e "$log" ]
  found=$?
  forget
  printf 'none\t%s\t%s\n' "$name" "$found"
fi
"""

# run:kill(sig): to the session's process group (the wrapper, which catches
# it with a no-op, and the program).
_SIGNAL = r"""
name=__NAME__
paths_of "$name"
if alive && kill -s __SIGNAL__ -- "-$pid" 2>/dev/null; then printf 'sent\n'; else printf 'none\n'; fi
"""

_CHECK = r"""
say "reached $here as $(id -un) (uid $(id -u)), login shell ${SHELL:-unknown}"
for tool in dtach script; do
  where=$(command -v "$tool" 2>/dev/null) && say "$tool: $where" || say "$tool: MISSING"
done
if [ -n "$problem" ]; then
  say "session folder: $problem"
else
  say "session folder: $d (drwx------, yours)"
fi
if [ -n "$missing$problem" ]; then
  [ -z "$missing" ] || say "install on $here: __INSTALL__"
  say 'NOT READY for persistent runs'
  exit 1
fi
say 'ready for persistent runs'
"""

_BODIES = {"run": _RUN, "list": _LIST, "kill": _KILL, "check": _CHECK, "signal": _SIGNAL}
_PLACEHOLDER = re.compile(r"__([A-Z_]+?)__")
# What the templates are filled with whatever the action: the session-name
# rule (as sessions.sanitize_name applies it) and the recording's bound.
_FIXED: dict[str, object] = {
    "NAME_CHARACTERS": rules.NAME_CHARACTERS,
    "NAME_LENGTH": rules.NAME_LENGTH,
    "RECORDING_HALF": rules.RECORDING_BYTES // 2,
}


def wrapper() -> str:
    """The far side's wrapper, as script(1) runs it there (REMOTE_WRAPPER,
    filled in)."""
    return _filled(REMOTE_WRAPPER, _FIXED)


def _filled(template: str, values: dict[str, object]) -> str:
    """`template` with each __PLACEHOLDER__ of `values` filled in, in one pass."""
    return _PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), m.group(0))), template)


def script_for(action: str, name: str, argv: list[str], nonce: str, install: str) -> str:
    """The remote sh program of `action` ("run", "list", "kill", "check",
    "signal": then argv is the signal's name). `name` is sanitised."""
    body = _BODIES[action]
    signal_name = "TERM"
    if action == "signal":
        signal_name = argv[0] if argv and argv[0].isalnum() else "TERM"
        argv = []
    values = {
        "SIGNAL": signal_name,
        "NONCE": nonce,
        "INSTALL": install,
        "NAME": shlex.quote(name),
        "WRAPPER": shlex.quote(
            _PLACEHOLDER.sub(lambda m: str(_FIXED.get(m.group(1), m.group(0))), REMOTE_WRAPPER)
        ),
        "SCRIPT_COMMAND": shlex.quote(SCRIPT_COMMAND),
        # The program's argv: "$@" and "$#" for the script, TTYOFFER_ARGV
        # (as shlex words) for the wrapper.
        "ARGV": shlex.quote(shlex.join(argv)),
        **_FIXED,
    }
    # One pass: what was put in is never read again for a placeholder (a
    # session named __NAME_LENGTH__ stays that name).
    script = _filled(_PREAMBLE + body, values)
    return f"set -- {shlex.join(argv)}\n{script}" if argv else f"set --\n{script}"
