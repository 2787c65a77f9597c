/*
 * ProcessPrng for Wine. Go 1.24+ on Windows takes its random bytes from
 * ProcessPrng in bcryptprimitives.dll, which Debian's Wine 8 does not
 * provide, so every Go test binary dies at start-up without it. This shim
 * fills the buffer from RtlGenRandom (advapi32's SystemFunction036), which
 * Wine implements. It only ever lives in the private test prefix that
 * scripts/wine/run-tests.sh makes; it is never shipped.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (!SystemFunction036(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
