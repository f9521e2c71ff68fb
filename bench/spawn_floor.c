/*
 * spawn_floor: what the compiled leader costs a command by itself, without
 * Neovim, our Lua or the host (the `spawn_floor` figure of bench/run.py).
 *
 *   spawn_floor LEADER ROUNDS PROGRAM [ARG...]
 *
 * Each round starts PROGRAM four ways, in turn, as jobstart() starts a job
 * (a session of its own, stdin /dev/null, stdout and stderr one pipe read
 * to its end, then waited for):
 *   stock        PROGRAM itself
 *   bare         the leader given a terminal it cannot open: it execs
 *                PROGRAM (one exec more, no process more)
 *   no_terminal  the leader given /dev/null: it does all it does (PROGRAM
 *                as its child, waited for) but take a terminal
 *   terminal     the leader given a pty's slave (held open here, as the
 *                host holds its spares): what an offered command runs
 * then all of it again with every process on one CPU (this program's
 * affinity, which its children inherit: a measurement, never what the
 * plugin does to a command). Prints the p50 of each, in ms, as JSON.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

extern char **environ;

enum { STOCK, BARE, NO_TERMINAL, TERMINAL, WAYS };
static const char *const NAMES[WAYS] = {"stock", "bare", "no_terminal", "terminal"};

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One start of argv, as jobstart() would: its time to the end, in ms. */
static double one_start(char **argv) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) < 0)
        exit(1);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&files, out[1], 1);
    posix_spawn_file_actions_adddup2(&files, out[1], 2);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID);
    double start = now_ms();
    pid_t pid;
    if (posix_spawn(&pid, argv[0], &files, &attributes, argv, environ) != 0) {
        perror(argv[0]);
        exit(1);
    }
    close(out[1]);
    char buffer[4096];
    while (read(out[0], buffer, sizeof buffer) > 0)
        ;
    close(out[0]);
    int status;
    waitpid(pid, &status, 0);
    double took = now_ms() - start;
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attributes);
    return took;
}

/* The p50 of each way over `rounds` rotations, printed as a JSON object
 * when `print`. */
static void rotation(char **ways[WAYS], int rounds, int print) {
    double *samples[WAYS];
    for (int way = 0; way < WAYS; way++)
        samples[way] = malloc(sizeof(double) * rounds);
    for (int round = 0; round < rounds; round++)
        for (int way = 0; way < WAYS; way++)
            samples[way][round] = one_start(ways[way]);
    for (int way = 0; way < WAYS; way++) {
        qsort(samples[way], rounds, sizeof(double), by_value);
        if (print)
            printf("%s\"%s\": %.4f", way ? ", " : "{", NAMES[way], samples[way][rounds / 2]);
        free(samples[way]);
    }
    if (print)
        printf("}");
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: spawn_floor LEADER ROUNDS PROGRAM [ARG...]\n");
        return 2;
    }
    int rounds = atoi(argv[2]);
    char **program = argv + 3;
    int count = argc - 3;
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0)
        return 1;
    char *slave = ptsname(master);
    int held = open(slave, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (held < 0)
        return 1;

    char *terminals[WAYS] = {0, "/nonexistent/ttyoffer-bench", "/dev/null", slave};
    char **ways[WAYS];
    ways[STOCK] = program;
    for (int way = BARE; way < WAYS; way++) {
        ways[way] = calloc(count + 4, sizeof(char *));
        ways[way][0] = argv[1];
        ways[way][1] = terminals[way];
        ways[way][2] = "-";
        for (int i = 0; i < count; i++)
            ways[way][3 + i] = program[i];
    }

    rotation(ways, 10, 0); /* warm the page cache and the allocator */
    printf("{\"spread\": ");
    rotation(ways, rounds, 1);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    if (sched_setaffinity(0, sizeof one, &one) == 0) {
        printf(", \"one_cpu\": ");
        rotation(ways, rounds, 1);
    }
    printf("}\n");
    return 0;
}
