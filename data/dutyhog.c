/* dutyhog: injected CPU noise of known size (issues #12 and #22).
 * Built with gcc -O2 by python -m jitterlab.recipes.run_ross_phold (ROSS PHOLD runs, see data/measured/PROVENANCE.md)
 * and by the kernel-event validation (tests/test_attribution.py,
 * benchmarks/bench_attribution.py).
 * Usage: dutyhog BUSY_US PERIOD_US SECONDS [LOGFILE] -- spins for BUSY_US microseconds out of
 * every PERIOD_US, for SECONDS in all (or until it is terminated), sleeping in between with
 * nanosleep (an hrtimer wakes it). With LOGFILE (x86 only), each spin's first and last
 * timestamp-counter reads are written there at the end, one "start end" line per spin, so that
 * the injected time can be compared with what a measurement attributes to this thread
 * (its comm is "dutyhog" unless the executable is renamed); with LOGFILE, SIGTERM or SIGINT
 * ends the run after the current spin and the log is still written. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_TSC 1
#else
#define HAVE_TSC 0
#endif
static volatile sig_atomic_t stop = 0;
static void on_signal(int signum) { (void)signum; stop = 1; }
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
static unsigned long long counter(void) {
#if HAVE_TSC
    return __rdtsc();
#else
    return 0;
#endif
}
int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: dutyhog BUSY_US PERIOD_US SECONDS [LOGFILE]\n");
        return 2;
    }
    double busy = atof(argv[1]) * 1e-6, period = atof(argv[2]) * 1e-6, total = atof(argv[3]);
    const char *log = argc == 5 ? argv[4] : NULL;
    if (log && !HAVE_TSC) { fprintf(stderr, "dutyhog: LOGFILE needs an x86 CPU\n"); return 2; }
    size_t capacity = 0, spins = 0;
    unsigned long long *stamps = NULL;
    if (log) {
        capacity = (size_t)(total / period) + 16;
        stamps = malloc(2 * capacity * sizeof *stamps);
        if (!stamps) { fprintf(stderr, "dutyhog: out of memory\n"); return 1; }
        for (size_t k = 0; k < 2 * capacity; k++) stamps[k] = 0; /* pages mapped now */
    }
    if (log) { /* without a log, a signal ends the process at once, as before */
        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);
    }
    double start = now(), next = start;
    volatile unsigned long sink = 0;
    while (!stop && now() - start < total) {
        unsigned long long first = counter();
        double t0 = now();
        while (now() - t0 < busy) sink++;
        unsigned long long last = counter();
        if (log && spins < capacity) {
            stamps[2 * spins] = first;
            stamps[2 * spins + 1] = last;
            spins++;
        }
        next += period;
        double rest = next - now();
        if (rest > 0 && !stop) {
            struct timespec s = {(time_t)rest, (long)((rest - (time_t)rest) * 1e9)};
            nanosleep(&s, NULL);
        } else {
            next = now();
        }
    }
    if (log) {
        FILE *out = fopen(log, "w");
        if (!out) { perror(log); return 1; }
        for (size_t k = 0; k < spins; k++) fprintf(out, "%llu %llu\n", stamps[2 * k], stamps[2 * k + 1]);
        fclose(out);
    }
    return 0;
}
