/*
 * ttyoffer-lead: the leader of a wrapped command's session, what the /bin/sh
 * prologue of lua/ttyoffer/routes/spawn.lua does, for one exec of a small static
 * program instead of a shell (see :help ttyoffer-contract).
 *
 *   ttyoffer-lead SLAVE FLAGS PROGRAM [ARG...]
 *
 * SLAVE   the pty to make the controlling terminal (/dev/pts/N)
 * FLAGS   letters, or "-" for none:
 *           g  set GPG_TTY to SLAVE (the caller's environment does not
 *              name it)
 *           p  a signal sent to the leader goes on to the program alone
 *              (vim.system()'s kill() signals its pid); without it, to the
 *              program's process group (jobstop() and system() signal the
 *              job's group)
 * PROGRAM looked up on $PATH as the shell's "$@" would, with its arguments
 *
 * Started by jobstart() or vim.system({detach = true}), the leader is a
 * session leader without a controlling terminal: opening the slave without
 * O_NOCTTY makes it the controlling one. The program then runs as a child
 * in a process group of its own, the terminal's foreground group while it
 * runs. When the leader of a session with a controlling terminal exits, the
 * kernel hangs up the terminal's foreground group (disassociate_ctty); the
 * leader takes the foreground back first, so the signal reaches the leader
 * alone and what the program left in the background (`server &`) lives on,
 * as in stock, where there is no terminal at all.
 *
 * The environment is the caller's, unchanged (no entry dropped, $PWD as
 * stock passes it), plus GPG_TTY (flag g) and TERM when it is absent or
 * empty. If the slave cannot be opened (the pty went with a dying host),
 * the program is exec'd as it is: it runs as it would without the plugin.
 *
 * Build: cc -O2 -Wall -Wextra [-static] -o ttyoffer-lead ttyoffer-lead.c
 * (done by :TtyOffer install and scripts/bootstrap.sh, never committed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

/* What a caller may send the leader to end the command: passed on. */
static const int FORWARDED[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE};
#define NFORWARDED (sizeof FORWARDED / sizeof FORWARDED[0])

static volatile pid_t program;    /* the child, once forked */
static volatile int to_group = 1; /* pass signals to its group, or to it */

/* A signal for the leader is the program's: sent on to where the caller's
 * signal would have gone in stock (a group for jobstop(), the program for
 * vim.system()'s kill()). The terminal's hang-up (the kernel's SIGHUP to
 * the session leader) goes to the group, as the kernel would send it. */
static void forward(int sig, siginfo_t *info, void *context) {
    int saved = errno;
    (void)context;
    if (program > 0) {
        int group = to_group || (sig == SIGHUP && info->si_code == SI_KERNEL);
        kill(group ? -program : program, sig);
    }
    errno = saved;
}

/* Whether a file of this bare name is in a folder of $PATH: execvp()
 * reports EACCES for a name that is nowhere when some folder of $PATH
 * cannot be searched (a PATH inherited through su), where the shell says
 * 127, not found. */
static int on_path(const char *name) {
    const char *path = getenv("PATH");
    char candidate[4096];
    struct stat info;
    if (path == NULL || *path == '\0')
        path = "/bin:/usr/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t length = end ? (size_t)(end - path) : strlen(path);
        int written = snprintf(candidate, sizeof candidate, "%.*s/%s", (int)length, length ? path : ".", name);
        if (written > 0 && (size_t)written < sizeof candidate && stat(candidate, &info) == 0)
            return 1;
        if (!end)
            break;
        path = end + 1;
    }
    return 0;
}

/* exec the program as "$@" would, or report as /bin/sh does (127 for a
 * program not found, 126 for one that cannot be run). */
static void run(char **argv) {
    execvp(argv[0], argv);
    int saved = errno;
    int missing = saved == ENOENT || (saved == EACCES && !strchr(argv[0], '/') && !on_path(argv[0]));
    dprintf(2, "ttyoffer-lead: %s: %s\n", argv[0], missing ? "not found" : strerror(saved));
    _exit(missing ? 127 : 126);
}

/* End as the program ended: its exit status, or its signal (without a
 * core of the leader's own). */
static void end_like(int status) {
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        struct rlimit none = {0, 0};
        struct sigaction dfl;
        sigset_t set;
        setrlimit(RLIMIT_CORE, &none);
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(sig, &dfl, NULL);
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        kill(getpid(), sig);
        _exit(128 + sig); /* a signal whose default is not to end */
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        dprintf(2, "usage: ttyoffer-lead SLAVE FLAGS PROGRAM [ARG...]\n");
        return 2;
    }
    const char *slave = argv[1], *flags = argv[2];
    char **command = argv + 3;
    to_group = strchr(flags, 'p') == NULL;

    int tty = open(slave, O_RDWR | O_CLOEXEC);
    if (tty < 0)
        run(command); /* no terminal: the command as it is */
    if (strchr(flags, 'g'))
        setenv("GPG_TTY", slave, 1);
    const char *term = getenv("TERM");
    if (term == NULL || *term == '\0')
        setenv("TERM", "xterm-256color", 1);

    /* Signals wait until the handlers know the program (blocked across the
     * fork); the program gets the mask the leader was started with. */
    sigset_t forwarded, started_with;
    sigemptyset(&forwarded);
    for (size_t i = 0; i < NFORWARDED; i++)
        sigaddset(&forwarded, FORWARDED[i]);
    sigprocmask(SIG_BLOCK, &forwarded, &started_with);
    /* tcsetpgrp() from a background group raises SIGTTOU: ignored while the
     * two sides hand the foreground over (the program's default comes back
     * before its exec). */
    struct sigaction ignore;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGTTOU, &ignore, NULL);

    /* vfork: no page tables to copy (the leader runs until the exec only
     * to hand the terminal over); the child touches nothing of the
     * leader's memory: system calls, then the exec or _exit. */
    pid_t leader = getpid();
    pid_t child = vfork();
    if (child < 0) {
        sigprocmask(SIG_SETMASK, &started_with, NULL);
        run(command); /* no job control: as the prologue without `set -m` */
    }
    if (child == 0) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        setpgid(0, 0);
        tcsetpgrp(tty, getpid());
        sigaction(SIGTTOU, &dfl, NULL);
        /* A SIGKILL for the leader (jobstop()'s second signal, a timed-out
         * :wait()) reaches the program too, as it would in stock. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != leader)
            raise(SIGKILL);
        sigprocmask(SIG_SETMASK, &started_with, NULL);
        run(command);
    }
    /* Both sides set the group and the foreground: whichever runs first. */
    setpgid(child, child);
    tcsetpgrp(tty, child);
    program = child;
    struct sigaction pass;
    memset(&pass, 0, sizeof pass);
    pass.sa_sigaction = forward;
    pass.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&pass.sa_mask);
    for (size_t i = 0; i < NFORWARDED; i++)
        sigaction(FORWARDED[i], &pass, NULL);
    sigprocmask(SIG_SETMASK, &started_with, NULL);
    /* The caller's pipes are the program's: the leader keeps none open, so
     * the caller sees them end when the program closes them. */
    close(0);
    close(1);
    close(2);

    int status;
    for (;;) {
        pid_t got = waitpid(child, &status, WUNTRACED);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            status = 1 << 8; /* cannot happen: our own child */
            break;
        }
        if (WIFSTOPPED(status)) {
            /* CTRL-Z typed in its prompt window: let go on at once, as
             * without job control. */
            tcsetpgrp(tty, child);
            kill(-child, SIGCONT);
            continue;
        }
        break;
    }
    /* The foreground back to the leader: the kernel's hang-up at its exit
     * then reaches no one else. */
    tcsetpgrp(tty, getpgrp());
    end_like(status);
}
