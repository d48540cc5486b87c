/* What cffi's generated module provides before it includes the shim (native/build_libaimux.py):
 * Python.h, CFFI_DLLEXPORT, cffi_start_python and the build-time paths. Lets `make lint` compile
 * native/src/aimux_shim.c on its own with -Wall -Wextra -Werror (shim_check.c). */
#ifndef AIMUX_SHIM_PRELUDE_H
#define AIMUX_SHIM_PRELUDE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define CFFI_DLLEXPORT __attribute__((visibility("default")))
int cffi_start_python(void);

#define AIMUX_BUILD_PATHS "/nonexistent"
#define AIMUX_PYTHON_HOME "/nonexistent"

#endif
