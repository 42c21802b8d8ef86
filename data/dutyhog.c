/* dutyhog: injected CPU noise for the ROSS PHOLD runs (issue #12; see
 * data/measured/PROVENANCE.md and data/run_ross_phold.py, which builds it with gcc -O2).
 * Usage: dutyhog BUSY_US PERIOD_US SECONDS -- spins for BUSY_US microseconds out of every
 * PERIOD_US, for SECONDS in all (or until it is terminated). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: dutyhog BUSY_US PERIOD_US SECONDS\n"); return 2; }
    double busy = atof(argv[1]) * 1e-6, period = atof(argv[2]) * 1e-6, total = atof(argv[3]);
    double start = now(), next = start;
    volatile unsigned long sink = 0;
    while (now() - start < total) {
        double t0 = now();
        while (now() - t0 < busy) sink++;
        next += period;
        double rest = next - now();
        if (rest > 0) {
            struct timespec s = {(time_t)rest, (long)((rest - (time_t)rest) * 1e9)};
            nanosleep(&s, NULL);
        } else {
            next = now();
        }
    }
    return 0;
}
