/*
 * standalone_main.c — a driver for fuzz_cabi.c where libFuzzer (clang) is missing: runs every
 * file given (or every file of every directory given), then random byte mutations of them for
 * -max_total_time=N seconds (default 10) with a fixed seed. Crashes abort() like under libFuzzer.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    uint8_t *d;
    size_t n;
} blob;
static blob *seeds;
static size_t nseeds, capseeds;

static void add_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n < 0 || n > (1 << 20)) {
        fclose(f);
        return;
    }
    uint8_t *d = malloc((size_t)n + 1);
    size_t got = fread(d, 1, (size_t)n, f);
    fclose(f);
    if (nseeds == capseeds) {
        capseeds = capseeds ? capseeds * 2 : 64;
        seeds = realloc(seeds, capseeds * sizeof *seeds);
    }
    seeds[nseeds++] = (blob){d, got};
}

int main(int argc, char **argv)
{
    double max_time = 10;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "-max_total_time=", 16) == 0) {
            max_time = atof(argv[i] + 16);
            continue;
        }
        if (argv[i][0] == '-') continue;
        struct stat st;
        if (stat(argv[i], &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            DIR *dir = opendir(argv[i]);
            struct dirent *e;
            while (dir && (e = readdir(dir))) {
                if (e->d_name[0] == '.') continue;
                char p[4096];
                snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
                add_file(p);
            }
            if (dir) closedir(dir);
        } else {
            add_file(argv[i]);
        }
    }
    for (size_t i = 0; i < nseeds; i++) LLVMFuzzerTestOneInput(seeds[i].d, seeds[i].n);
    fprintf(stderr, "standalone: %zu seed inputs ok\n", nseeds);
    if (!nseeds) return 0;
    srand(1234);
    time_t end = time(NULL) + (time_t)max_time;
    unsigned long runs = 0;
    uint8_t buf[4096];
    while (time(NULL) < end) {
        blob s = seeds[(size_t)rand() % nseeds];
        size_t n = s.n < sizeof buf ? s.n : sizeof buf;
        memcpy(buf, s.d, n);
        int muts = 1 + rand() % 8;
        for (int m = 0; m < muts && n; m++) {
            size_t at = (size_t)rand() % n;
            switch (rand() % 4) {
            case 0: buf[at] = (uint8_t)rand(); break;
            case 1: buf[at] ^= (uint8_t)(1u << (rand() % 8)); break;
            case 2:
                memmove(buf + at, buf + at + 1, n - at - 1);
                n--;
                break;
            default:
                if (n < sizeof buf) {
                    memmove(buf + at + 1, buf + at, n - at);
                    n++;
                }
                break;
            }
        }
        LLVMFuzzerTestOneInput(buf, n);
        runs++;
    }
    fprintf(stderr, "standalone: %lu mutated inputs ok\n", runs);
    return 0;
}
