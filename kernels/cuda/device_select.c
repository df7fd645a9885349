/* device_select.c — `--device cpu|cuda|auto`: parsing and resolution.
 * Built in every configuration (it is plain C), so programs take the
 * flag whether or not this build has the CUDA back end; in a build
 * without it, device_available() is 0 and "cuda" resolves to an error. */
#include "cuda/device.h"

#include <string.h>

hat_device device_parse(const char *s)
{
    if (!s) return HAT_DEVICE_INVALID;
    if (!strcmp(s, "cpu")) return HAT_DEVICE_CPU;
    if (!strcmp(s, "cuda") || !strcmp(s, "gpu")) return HAT_DEVICE_CUDA;
    if (!strcmp(s, "auto")) return HAT_DEVICE_AUTO;
    return HAT_DEVICE_INVALID;
}

const char *device_name(hat_device d)
{
    switch (d) {
    case HAT_DEVICE_CPU:  return "cpu";
    case HAT_DEVICE_CUDA: return "cuda";
    case HAT_DEVICE_AUTO: return "auto";
    default:              return "invalid";
    }
}

#ifndef HAT_CUDA
int device_available(void) { return 0; }
int device_compiled(void) { return 0; }
void device_bind_thread(void) {}
#endif

hat_device device_resolve(hat_device d, const char **why)
{
    const char *dummy;
    if (!why) why = &dummy;
    *why = NULL;
    if (d == HAT_DEVICE_CPU) return d;
    if (d == HAT_DEVICE_AUTO) return device_available() > 0 ? HAT_DEVICE_CUDA : HAT_DEVICE_CPU;
    if (d != HAT_DEVICE_CUDA) { *why = "unknown device (expected cpu, cuda or auto)"; return HAT_DEVICE_INVALID; }
    if (!device_compiled()) { *why = "this build has no CUDA back end (rebuild with make CUDA=1)"; return HAT_DEVICE_INVALID; }
    if (device_available() <= 0) { *why = "no CUDA GPU or driver found"; return HAT_DEVICE_INVALID; }
    return d;
}
