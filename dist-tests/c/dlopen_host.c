/* A host that dlopens libaimux, as the Node, Go and Java bindings do (dist-tests): the library
 * must bring its own libpython dependency (its DT_NEEDED) and run a call.
 * Usage: dlopen_host <libaimux.so.1>. Prints the aimux.version result; exit status 0 on success. */
#include <dlfcn.h>
#include <stdio.h>

typedef void *(*call_fn)(const char *, const char *, char **);
typedef void (*free_fn)(char *);

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: dlopen_host <libaimux.so.1>\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        printf("dlopen FAILED: %s\n", dlerror());
        return 1;
    }
    call_fn call = (call_fn)dlsym(lib, "aimux_call");
    char *result = NULL;
    if (call == NULL || call("aimux.version", "{}", &result) != NULL || result == NULL) {
        printf("aimux.version FAILED\n");
        return 1;
    }
    printf("dlopen ok: aimux.version %s\n", result);
    free_fn string_free = (free_fn)dlsym(lib, "aimux_string_free");
    if (string_free != NULL) string_free(result);
    return 0;
}
