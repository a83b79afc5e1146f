/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A setuid-root stand-in for passwd, for tests/integration/hardening-files.sh: installed
 * setuid root and run by an unprivileged user who gave it descriptors (`exec 5<file; exec
 * suidhold`), it opens nothing itself and keeps what it inherited until killed. Its ids in
 * /proc/PID/status (real 65534, effective 0) tell the test it runs.
 */
#include <unistd.h>

int main(void)
{
	for (;;)
		pause();
}
