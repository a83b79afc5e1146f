# SPDX-License-Identifier: Apache-2.0
# Hostile descriptor hog: 30 processes holding about 19,900 descriptors each of FILE (as many as
# RLIMIT_NOFILE lets one process have, up to 20,000); creates READY_FILE once all are forked, then
# sleeps. Usage: fd_hog.py FILE READY_FILE
import os, resource, sys, time
n = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 20000) - 100
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 100, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
fd = os.open(sys.argv[1], os.O_RDONLY)
for i in range(100, n + 100):
    os.dup2(fd, i)
for _ in range(29):
    if os.fork() == 0:
        break
else:
    open(sys.argv[2], "w").close()
time.sleep(1000)
