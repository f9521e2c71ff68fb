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
 * PROGRAM looked up on $PATH as execvp(3) does, with its arguments
 *
 * Started by jobstart() or vim.system({detach = true}), the leader leads a
 * session with no controlling terminal: opening the slave without O_NOCTTY
 * makes it one. The program runs as a child, in a group of its own that is
 * the terminal's foreground one; the leader takes the foreground back before
 * it exits, so the kernel's hang-up at that exit (disassociate_ctty) misses
 * what the program left in the background (`server &`), as in stock.
 *
 * The environment is the caller's, unchanged (no entry dropped, $PWD as
 * stock passes it), plus GPG_TTY (flag g) and TERM when it is absent or
 * empty. If the slave cannot be opened (the pty went with a dying host),
 * the program is exec'd as it is: it runs as it would without the plugin.
 *
 * A program the terminal's hang-up killed (the plugin's: a prompt declined,
 * or one no key could reach) ends the leader with 129, a failure however it
 * is read, where stock's fails with a code of its own: see hang_up_of().
 *
 * Every wrapped spawn pays this program's start, so on x86-64 and arm64 it
 * is built without libc (LEAD_FREESTANDING: the system calls below, and a
 * _start of its own): a static glibc's start probes the CPU, dozens of traps
 * to the hypervisor in a virtual machine (DESIGN.md, "Measured facts").
 * Elsewhere the same code runs on libc. The builds to try, in order, are
 * ttyoffer-lead.flags (read by :TtyOffer install and scripts/build_leader).
 */
#define _GNU_SOURCE
/* Constants and types only: without libc, no function of theirs is called. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- System calls: each returns its result, or -errno. ---------------- */

#ifdef LEAD_FREESTANDING
#include <asm/unistd.h>
#define NUMBER_(n) #n
#define NUMBER(n) NUMBER_(n)

#if defined(__x86_64__)
static long call6(long n, long a, long b, long c, long d, long e, long f) {
    register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
    long result;
    __asm__ volatile("syscall"
                     : "=a"(result)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return result;
}
/* The kernel returns from a handler through the caller's trampoline. */
#define KERNEL_SA_RESTORER 0x04000000UL
void lead_restore(void);
/* lead_clone(flags, stack, fn, arg): clone(2) with the child on `stack`,
 * where it runs fn(arg) and exits with what it returns. The parent gets
 * the child's pid or -errno. */
__asm__(".text\n"
        ".global _start\n_start:\n\txor %ebp, %ebp\n\tmov %rsp, %rdi\n\tand $-16, %rsp\n\tcall lead_start\n\thlt\n"
        ".global lead_restore\nlead_restore:\n\tmov $" NUMBER(__NR_rt_sigreturn) ", %eax\n\tsyscall\n\thlt\n"
        ".global lead_clone\nlead_clone:\n"
        "\tand $-16, %rsi\n\tsub $16, %rsi\n\tmov %rdx, (%rsi)\n\tmov %rcx, 8(%rsi)\n"
        "\txor %edx, %edx\n\txor %r10d, %r10d\n\txor %r8d, %r8d\n"
        "\tmov $" NUMBER(__NR_clone) ", %eax\n\tsyscall\n\ttest %rax, %rax\n\tjnz 1f\n"
        "\tpop %rax\n\tpop %rdi\n\txor %ebp, %ebp\n\tcall *%rax\n"
        "\tmov %eax, %edi\n\tmov $" NUMBER(__NR_exit_group) ", %eax\n\tsyscall\n\thlt\n"
        "1:\tret\n");
#elif defined(__aarch64__)
static long call6(long n, long a, long b, long c, long d, long e, long f) {
    register long x8 __asm__("x8") = n, x0 __asm__("x0") = a, x1 __asm__("x1") = b, x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d, x4 __asm__("x4") = e, x5 __asm__("x5") = f;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory", "cc");
    return x0;
}
/* No restorer: the kernel returns from a handler through the vDSO's. */
#define KERNEL_SA_RESTORER 0UL
#define lead_restore 0
/* lead_clone(flags, stack, fn, arg): as on x86-64 (clone's arguments here
 * are flags, stack, parent_tid, tls, child_tid). */
__asm__(".text\n"
        ".global _start\n_start:\n\tmov x29, #0\n\tmov x30, #0\n\tmov x0, sp\n\tbl lead_start\n\tbrk #0\n"
        ".global lead_clone\nlead_clone:\n"
        "\tand x1, x1, #-16\n\tstp x2, x3, [x1, #-16]!\n"
        "\tmov x2, #0\n\tmov x3, #0\n\tmov x4, #0\n\tmov x8, #" NUMBER(__NR_clone) "\n\tsvc #0\n\tcbnz x0, 1f\n"
        "\tldp x1, x0, [sp], #16\n\tmov x29, #0\n\tblr x1\n"
        "\tmov x8, #" NUMBER(__NR_exit_group) "\n\tsvc #0\n\tbrk #0\n"
        "1:\tret\n");
#else
#error "LEAD_FREESTANDING: x86-64 and arm64 only; the next build of ttyoffer-lead.flags uses libc"
#endif

#define call3(n, a, b, c) call6(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)

/* The compiler may call these for struct copies and zeroing. */
void *memset(void *to, int byte, unsigned long n) {
    unsigned char *p = to;
    while (n--)
        *p++ = (unsigned char)byte;
    return to;
}
void *memcpy(void *to, const void *from, unsigned long n) {
    unsigned char *p = to;
    const unsigned char *q = from;
    while (n--)
        *p++ = *q++;
    return to;
}

static long sys_open(const char *path, int flags) { return call6(__NR_openat, AT_FDCWD, (long)path, flags, 0, 0, 0); }
static long sys_close(int fd) { return call3(__NR_close, fd, 0, 0); }
static long sys_exists(const char *path) { return call6(__NR_faccessat, AT_FDCWD, (long)path, F_OK, 0, 0, 0); }
static long sys_write(int fd, const char *text, unsigned long n) { return call3(__NR_write, fd, text, n); }
static long sys_foreground(int tty, int group) { return call3(__NR_ioctl, tty, TIOCSPGRP, &group); }
static long sys_getpid(void) { return call3(__NR_getpid, 0, 0, 0); }
static long sys_getppid(void) { return call3(__NR_getppid, 0, 0, 0); }
static long sys_getpgrp(void) { return call3(__NR_getpgid, 0, 0, 0); }
static long sys_setpgid(int pid, int group) { return call3(__NR_setpgid, pid, group, 0); }
long lead_clone(unsigned long flags, void *stack, int (*fn)(void *), void *arg);
static long sys_spawn(int (*fn)(void *), void *arg, void *stack) {
    return lead_clone(CLONE_VM | CLONE_VFORK | SIGCHLD, stack, fn, arg);
}
static long sys_execve(const char *path, char **argv, char **envp) { return call3(__NR_execve, path, argv, envp); }
static long sys_wait(int pid, int *status, int options) { return call6(__NR_wait4, pid, (long)status, options, 0, 0, 0); }
static long sys_kill(int pid, int sig) { return call3(__NR_kill, pid, sig, 0); }
static long sys_die_with_parent(int sig) { return call6(__NR_prctl, PR_SET_PDEATHSIG, sig, 0, 0, 0, 0); }
static long sys_fork(void) { return call6(__NR_clone, SIGCHLD, 0, 0, 0, 0, 0); }
static long sys_yield(void) { return call3(__NR_sched_yield, 0, 0, 0); }
static long sys_no_core(void) {
    struct rlimit none = {0, 0};
    return call6(__NR_prlimit64, 0, RLIMIT_CORE, (long)&none, 0, 0, 0);
}
__attribute__((noreturn)) static void sys_exit(int code) {
    for (;;)
        call3(__NR_exit_group, code, 0, 0);
}

typedef unsigned long lead_mask; /* the kernel's: signals 1..64 as bits */
static void mask_empty(lead_mask *mask) { *mask = 0; }
static void mask_add(lead_mask *mask, int sig) { *mask |= 1UL << (sig - 1); }
static long sys_mask(int how, const lead_mask *set, lead_mask *old) {
    return call6(__NR_rt_sigprocmask, how, (long)set, (long)old, sizeof(lead_mask), 0, 0);
}
static long sys_sigwait(const lead_mask *set) {
    return call6(__NR_rt_sigtimedwait, (long)set, 0, 0, sizeof(lead_mask), 0, 0);
}
struct kernel_sigaction {
    void *handler;
    unsigned long flags;
    void (*restorer)(void);
    lead_mask mask;
};
/* SIG_DFL, SIG_IGN, or a handler (with siginfo, restarting, all blocked). */
static long sys_action(int sig, void (*disposition)(int), void (*handler)(int, siginfo_t *, void *)) {
    struct kernel_sigaction action = {(void *)disposition, 0, 0, 0};
    if (handler) {
        action.handler = (void *)handler;
        action.flags = SA_SIGINFO | SA_RESTART | KERNEL_SA_RESTORER;
        action.restorer = lead_restore;
        action.mask = ~0UL;
    }
    return call6(__NR_rt_sigaction, sig, (long)&action, 0, sizeof(lead_mask), 0, 0);
}

#else /* on libc */
#include <string.h>
static long checked(long result) { return result < 0 ? -errno : result; }
static long sys_open(const char *path, int flags) { return checked(open(path, flags)); }
static long sys_close(int fd) { return checked(close(fd)); }
static long sys_exists(const char *path) { return checked(access(path, F_OK)); }
static long sys_write(int fd, const char *text, unsigned long n) { return checked(write(fd, text, n)); }
static long sys_foreground(int tty, int group) { return checked(tcsetpgrp(tty, group)); }
static long sys_getpid(void) { return getpid(); }
static long sys_getppid(void) { return getppid(); }
static long sys_getpgrp(void) { return getpgrp(); }
static long sys_setpgid(int pid, int group) { return checked(setpgid(pid, group)); }
static long sys_spawn(int (*fn)(void *), void *arg, void *stack) {
    return checked(clone(fn, stack, CLONE_VM | CLONE_VFORK | SIGCHLD, arg));
}
static long sys_execve(const char *path, char **argv, char **envp) { return checked(execve(path, argv, envp)); }
static long sys_wait(int pid, int *status, int options) { return checked(waitpid(pid, status, options)); }
static long sys_kill(int pid, int sig) { return checked(kill(pid, sig)); }
static long sys_die_with_parent(int sig) { return checked(prctl(PR_SET_PDEATHSIG, sig)); }
static long sys_fork(void) { return checked(fork()); }
static long sys_yield(void) { return checked(sched_yield()); }
static long sys_no_core(void) {
    struct rlimit none = {0, 0};
    return checked(setrlimit(RLIMIT_CORE, &none));
}
__attribute__((noreturn)) static void sys_exit(int code) { _exit(code); }

typedef sigset_t lead_mask;
static void mask_empty(lead_mask *mask) { sigemptyset(mask); }
static void mask_add(lead_mask *mask, int sig) { sigaddset(mask, sig); }
static long sys_mask(int how, const lead_mask *set, lead_mask *old) { return checked(sigprocmask(how, set, old)); }
static long sys_sigwait(const lead_mask *set) { return checked(sigwaitinfo(set, NULL)); }
static long sys_action(int sig, void (*disposition)(int), void (*handler)(int, siginfo_t *, void *)) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    if (handler) {
        action.sa_sigaction = handler;
        action.sa_flags = SA_SIGINFO | SA_RESTART;
        sigfillset(&action.sa_mask);
    } else {
        action.sa_handler = disposition;
    }
    return checked(sigaction(sig, &action, NULL));
}
#endif

/* ---- Strings ------------------------------------------------------------ */

static unsigned long length(const char *text) {
    unsigned long n = 0;
    while (text[n])
        n++;
    return n;
}

static int has_char(const char *text, char wanted) {
    for (; *text; text++)
        if (*text == wanted)
            return 1;
    return 0;
}

/* The value in an environment entry `name=value`, or NULL for another. */
static const char *value_of(const char *entry, const char *name) {
    while (*name && *entry == *name)
        entry++, name++;
    return *name == '\0' && *entry == '=' ? entry + 1 : 0;
}

/* The value of `name` in `envp`, or NULL (the first, as getenv(3)). */
static const char *lookup(char **envp, const char *name) {
    for (; *envp; envp++) {
        const char *value = value_of(*envp, name);
        if (value)
            return value;
    }
    return 0;
}

/* `first` and `second` one after the other into `to`, which holds both. */
static char *concat(char *to, const char *first, const char *second) {
    char *at = to;
    while (*first)
        *at++ = *first++;
    while (*second)
        *at++ = *second++;
    *at = '\0';
    return to;
}

/* What a failed exec says, as strerror(3) would for the ones it can be. */
static const char *reason(int error) {
    switch (error) {
    case EACCES: return "Permission denied";
    case ENOEXEC: return "Exec format error";
    case E2BIG: return "Argument list too long";
    case ENOMEM: return "Cannot allocate memory";
    case ELOOP: return "Too many levels of symbolic links";
    case ENAMETOOLONG: return "File name too long";
    case ENOTDIR: return "Not a directory";
    case EISDIR: return "Is a directory";
    case ETXTBSY: return "Text file busy";
    case EPERM: return "Operation not permitted";
    case EIO: return "Input/output error";
    case EINVAL: return "Invalid argument";
    case EMFILE: return "Too many open files";
    case ENFILE: return "Too many open files in system";
    case ELIBBAD: return "Accessing a corrupted shared library";
    default: return "cannot run it";
    }
}

/* ---- Running the program ------------------------------------------------ */

/* The next "folder/name" of $PATH (the current folder for an empty
 * folder), as execvp(3) builds them; *cursor walks $PATH. 0 at the end. */
static int next_candidate(const char **cursor, const char *name, char *candidate, unsigned long room) {
    while (*cursor) {
        const char *start = *cursor, *end = start;
        while (*end && *end != ':')
            end++;
        *cursor = *end ? end + 1 : 0;
        unsigned long folder = (unsigned long)(end - start);
        unsigned long size = length(name);
        if (folder + size + 2 > room)
            continue; /* too long to be a file */
        unsigned long at = 0;
        for (const char *p = start; p < end; p++)
            candidate[at++] = *p;
        if (folder)
            candidate[at++] = '/';
        for (unsigned long i = 0; i <= size; i++)
            candidate[at++] = name[i];
        return 1;
    }
    return 0;
}

/* execve, and for a file the kernel cannot run (no #!), /bin/sh reading
 * it, as execvp(3) does: `/bin/sh path args...` in the slots of the
 * leader's own argv before the program's (argv[-1] is the FLAGS argument;
 * no array to allocate on the program's small stack), put back after. */
static long exec_file(const char *path, char **argv, char **envp) {
    long result = sys_execve(path, argv, envp);
    if (result == -ENOEXEC) {
        char *before = argv[-1], *program = argv[0];
        argv[-1] = "/bin/sh";
        argv[0] = (char *)path;
        sys_execve("/bin/sh", argv - 1, envp);
        argv[-1] = before;
        argv[0] = program;
    }
    return result;
}

/* execvp(3) with `envp`: returns -errno when nothing could be run. */
static long exec_search(char **argv, char **envp) {
    const char *name = argv[0];
    if (has_char(name, '/'))
        return exec_file(name, argv, envp);
    if (!*name)
        return -ENOENT;
    const char *cursor = lookup(envp, "PATH");
    if (!cursor)
        cursor = "/bin:/usr/bin";
    char candidate[4096];
    int denied = 0;
    while (next_candidate(&cursor, name, candidate, sizeof candidate)) {
        long result = exec_file(candidate, argv, envp);
        if (result == -EACCES)
            denied = 1;
        else if (result != -ENOENT && result != -ESTALE && result != -ENOTDIR && result != -ENODEV &&
                 result != -ETIMEDOUT)
            return result;
    }
    return denied ? -EACCES : -ENOENT;
}

/* Whether a file of this bare name is in a folder of $PATH: execvp()
 * reports EACCES for a name that is nowhere when some folder of $PATH
 * cannot be searched (a PATH inherited through su), where the shell says
 * 127, not found. */
static int on_path(const char *name, char **envp) {
    const char *cursor = lookup(envp, "PATH");
    char candidate[4096];
    if (!cursor)
        cursor = "/bin:/usr/bin";
    while (next_candidate(&cursor, name, candidate, sizeof candidate))
        if (sys_exists(candidate) == 0)
            return 1;
    return 0;
}

/* exec the program, or report as /bin/sh does (127 for a program not
 * found, 126 for one that cannot be run). */
__attribute__((noreturn)) static void run(char **argv, char **envp) {
    int error = (int)-exec_search(argv, envp);
    int missing = error == ENOENT || (error == EACCES && !has_char(argv[0], '/') && !on_path(argv[0], envp));
    const char *parts[] = {"ttyoffer-lead: ", argv[0], ": ", missing ? "not found" : reason(error), "\n"};
    for (unsigned long i = 0; i < sizeof parts / sizeof parts[0]; i++)
        sys_write(2, parts[i], length(parts[i]));
    sys_exit(missing ? 127 : 126);
}

/* What a caller may send the leader to end the command: passed on. */
static const int FORWARDED[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE};
#define NFORWARDED (sizeof FORWARDED / sizeof FORWARDED[0])

static volatile int program;      /* the child, once forked */
static volatile int hung_up;      /* the terminal's hang-up reached the leader */
static volatile int to_group = 1; /* pass signals to its group, or to it */
static volatile int watcher;      /* the watcher's pid once started (-1: it could not be) */
static int terminal = -1;         /* the leader's descriptor of the slave */

/* The watcher. jobstop()'s SIGKILL (2 s after its SIGTERM) ends stock's
 * whole group; here the leader, and the program through PR_SET_PDEATHSIG,
 * but not the rest of the program's group. So once the leader has passed a
 * signal on to that group, a process in a group of its own waits for the
 * leader's end: one the leader did not choose (its own way out kills the
 * watcher first) is a SIGKILL, passed on to the program's group (DESIGN.md,
 * "The mechanism"). A fork per command signalled, none for the others. */
__attribute__((noreturn)) static void watch_leader(int leader, int group) {
    lead_mask parent_died; /* every signal is blocked: a handler's mask */
    sys_setpgid(0, 0);
    sys_close(0);
    sys_close(1);
    sys_close(2);
    sys_close(terminal);
    mask_empty(&parent_died);
    mask_add(&parent_died, SIGUSR1);
    sys_die_with_parent(SIGUSR1);
    while (sys_getppid() == leader)
        sys_sigwait(&parent_died);
    sys_kill(-group, SIGKILL);
    sys_exit(0);
}

/* Whether this is the terminal's hang-up, only ever the plugin's: the
 * kernel's SIGHUP (SI_KERNEL) as the pty's last master goes, or the host's,
 * sent first (its keeper may hold that master longer) by sigqueue(3) with
 * this word (HANG_UP_MARK of term/hangup.py, a test holds them equal). */
#define LEAD_HANG_UP_MARK 0x74746875UL
static int hang_up_of(int sig, const siginfo_t *info) {
    int marked = info->si_code == SI_QUEUE && (unsigned long)info->si_value.sival_ptr == LEAD_HANG_UP_MARK;
    return sig == SIGHUP && (info->si_code == SI_KERNEL || marked);
}

/* A signal for the leader is the program's: sent on where the caller's would
 * have gone in stock (a group for jobstop(), the program for vim.system()'s
 * kill()); the terminal's hang-up to the group, as the kernel sends it. */
static void forward(int sig, siginfo_t *info, void *context) {
    (void)context;
    int hang_up = hang_up_of(sig, info);
    hung_up |= hang_up;
    if (program > 0) {
        int group = to_group || hang_up;
        sys_kill(group ? -program : program, sig);
        if (to_group && watcher == 0) {
            int leader = (int)sys_getpid();
            long pid = sys_fork();
            if (pid == 0)
                watch_leader(leader, program);
            /* Both sides set its group, whichever runs first: a new child
             * may wait long for its first run on a loaded machine, and until
             * it leaves the leader's group, jobstop()'s SIGKILL for that
             * group would end it too, and nothing would end the program's. */
            if (pid > 0)
                sys_setpgid((int)pid, (int)pid);
            watcher = pid > 0 ? (int)pid : -1;
        }
    }
}

/* End as the program ended: its exit status, or its signal (without a
 * core of the leader's own); killed by the terminal's hang-up, with 129. */
__attribute__((noreturn)) static void end_like(int status) {
    if (hung_up && WIFSIGNALED(status) && WTERMSIG(status) == SIGHUP)
        sys_exit(128 + SIGHUP);
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        lead_mask set;
        sys_no_core();
        sys_action(sig, SIG_DFL, 0);
        mask_empty(&set);
        mask_add(&set, sig);
        sys_mask(SIG_UNBLOCK, &set, 0);
        sys_kill((int)sys_getpid(), sig);
        sys_exit(128 + sig); /* a signal whose default is not to end */
    }
    sys_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

/* The caller's environment into `to` (room for it and two entries more),
 * with the entries `gpg_tty` and `term` (GPG_TTY=..., TERM=...) in place
 * of any of their names, each when not NULL. */
static char **environment(char **envp, char **to, char *gpg_tty, char *term) {
    char **out = to;
    for (; *envp; envp++) {
        if (gpg_tty && value_of(*envp, "GPG_TTY"))
            continue;
        if (term && value_of(*envp, "TERM"))
            continue;
        *out++ = *envp;
    }
    if (gpg_tty)
        *out++ = gpg_tty;
    if (term)
        *out++ = term;
    *out = 0;
    return to;
}

/* What the program's side needs to start it. */
struct start {
    int tty, leader;
    const lead_mask *started_with;
    char **command, **env;
};

/* Its own stack: the kernel's initial one stays the leader's. */
static char child_stack[64 * 1024] __attribute__((aligned(16)));

/* The program's side, between the clone and the exec: system calls only,
 * then run() (whose PATH search uses this stack). */
static int start_program(void *context) {
    const struct start *start = context;
    int self = (int)sys_getpid();
    sys_setpgid(0, 0);
    sys_foreground(start->tty, self);
    sys_action(SIGTTOU, SIG_DFL, 0);
    /* A SIGKILL for the leader (jobstop()'s second signal, a timed-out
     * :wait()) reaches the program too, as it would in stock. */
    sys_die_with_parent(SIGKILL);
    if (sys_getppid() != start->leader)
        sys_kill(self, SIGKILL);
    sys_mask(SIG_SETMASK, start->started_with, 0);
    /* The leader, asleep in the vfork, may stay queued on this CPU a while
     * (EEVDF's delayed dequeue), and the exec would then move the program
     * to another CPU (sched_exec). Yielding keeps it here, as stock's child:
     * 0.04-0.08 ms a spawn (DESIGN.md, "Measured facts"). Nothing the
     * program can see changes. */
    sys_yield();
    run(start->command, start->env);
}

__attribute__((noreturn)) static void lead(int argc, char **argv, char **envp) {
    if (argc < 4) {
        const char *usage = "usage: ttyoffer-lead SLAVE FLAGS PROGRAM [ARG...]\n";
        sys_write(2, usage, length(usage));
        sys_exit(2);
    }
    const char *slave = argv[1], *flags = argv[2];
    char **command = argv + 3;
    to_group = !has_char(flags, 'p');

    int tty = (int)sys_open(slave, O_RDWR | O_CLOEXEC);
    if (tty < 0)
        run(command, envp); /* no terminal: the command as it is */
    terminal = tty;

    int entries = 0;
    while (envp[entries])
        entries++;
    char *entries_[entries + 3];
    char gpg_tty[sizeof "GPG_TTY=" + length(slave)];
    char term[] = "TERM=xterm-256color";
    const char *inherited_term = lookup(envp, "TERM");
    char **env = environment(envp, entries_, has_char(flags, 'g') ? concat(gpg_tty, "GPG_TTY=", slave) : 0,
                             inherited_term == 0 || *inherited_term == '\0' ? term : 0);

    /* Signals wait until the handlers know the program (blocked across the
     * fork); the program gets the mask the leader was started with. */
    lead_mask forwarded, started_with;
    mask_empty(&forwarded);
    for (unsigned long i = 0; i < NFORWARDED; i++)
        mask_add(&forwarded, FORWARDED[i]);
    sys_mask(SIG_BLOCK, &forwarded, &started_with);
    /* tcsetpgrp() from a background group raises SIGTTOU: ignored during the
     * handover (the program's default is back before its exec). */
    sys_action(SIGTTOU, SIG_IGN, 0);

    /* vfork-like: the leader waits, its memory shared (no page tables to
     * copy), until the exec; the child, on a stack of its own, writes only
     * the argv slots exec_file() borrows and puts back. No CLONE_SIGHAND. */
    struct start start = {tty, (int)sys_getpid(), &started_with, command, env};
    int child = (int)sys_spawn(start_program, &start, child_stack + sizeof child_stack);
    if (child < 0) {
        sys_mask(SIG_SETMASK, &started_with, 0);
        run(command, env); /* no job control: as the prologue without `set -m` */
    }
    /* Both sides set the group and the foreground: whichever runs first. */
    sys_setpgid(child, child);
    sys_foreground(tty, child);
    program = child;
    for (unsigned long i = 0; i < NFORWARDED; i++)
        sys_action(FORWARDED[i], 0, forward);
    sys_mask(SIG_SETMASK, &started_with, 0);
    /* The caller's pipes are the program's: the leader keeps none open, so
     * the caller sees them end when the program closes them. */
    sys_close(0);
    sys_close(1);
    sys_close(2);

    int status = 0;
    for (;;) {
        long got = sys_wait(child, &status, WUNTRACED);
        if (got < 0) {
            if (got == -EINTR)
                continue;
            status = 1 << 8; /* cannot happen: our own child */
            break;
        }
        if (WIFSTOPPED(status)) {
            /* Stopped by SIGSTOP (kill -STOP from outside): it stays so, as
             * stock's, until a SIGCONT; the wait goes on. Job control's stops
             * (SIGTSTP, SIGTTIN, SIGTTOU) never stop stock's command, in an
             * orphaned group (the kernel discards them): let it go on. */
            if (WSTOPSIG(status) != SIGSTOP) {
                sys_foreground(tty, child);
                sys_kill(-child, SIGCONT);
            }
            continue;
        }
        break;
    }
    /* No more signals passed on: the program has ended, what it left in
     * its group (`server &`) is not the caller's to signal. The leader's
     * own end is chosen: the watcher goes first. */
    sys_mask(SIG_BLOCK, &forwarded, 0);
    if (watcher > 0)
        sys_kill(watcher, SIGKILL);
    /* The foreground back to the leader: the kernel's hang-up at its exit
     * then reaches no one else. */
    sys_foreground(tty, (int)sys_getpgrp());
    end_like(status);
}

#ifdef LEAD_FREESTANDING
/* The kernel's initial stack: argc, argv..., NULL, envp..., NULL. */
__attribute__((used, noreturn)) void lead_start(long *stack) {
    int argc = (int)stack[0];
    char **argv = (char **)(stack + 1);
    lead(argc, argv, argv + argc + 1);
}
#else
int main(int argc, char **argv, char **envp) { lead(argc, argv, envp); }
#endif
