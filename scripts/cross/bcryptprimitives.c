/* A stand-in for Windows' bcryptprimitives.dll, which Wine 8.0 lacks: Rust's standard library
 * (1.78 on) imports ProcessPrng from it, so no Rust program starts under that Wine without one.
 * Built by scripts/cross-check.sh with x86_64-w64-mingw32-gcc -shared and put next to the .exe
 * files it runs under wine; never part of a Phosphor build. ProcessPrng fills the buffer from
 * RtlGenRandom (advapi32's SystemFunction036), as the real one fills it from the system RNG. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, n)) return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
