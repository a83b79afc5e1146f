/* SPDX-License-Identifier: Apache-2.0 */
/* channel: the messages between the two processes, and the sealed memfds of a body. */
#define _GNU_SOURCE
#include "wire/channel.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/util.h"

/*
 * fstat() by the plain system call: glibc >= 2.33 makes it newfstatat(fd, "", AT_EMPTY_PATH),
 * whose path the HTTP process's filter cannot read, so that filter refuses newfstatat. x86_64's
 * and the generic struct stat are the kernel's.
 */
static int body_fstat(int fd, struct stat *st)
{
#if defined(SYS_fstat) && (defined(__x86_64__) || defined(__aarch64__))
	return (int)syscall(SYS_fstat, fd, st);
#else
	return fstat(fd, st);
#endif
}

/* The seals a body's memfd carries: nothing may write it, shrink it, grow it, or unseal it. */
#define PRIVSEP_SEALS (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
/* Room for more descriptors than any message may carry, so that extra ones are seen and closed. */
#define PRIVSEP_RECV_FDS 8

int privsep_send(int sock, const void *msg, size_t len, const int *fds, size_t n_fds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * PRIVSEP_MAX_FDS)];
	} cm;
	struct iovec iov = { (void *)(uintptr_t)msg, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (n_fds > PRIVSEP_MAX_FDS)
		return -EINVAL;
	if (n_fds > 0) {
		struct cmsghdr *c;

		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* Every descriptor of mh's SCM_RIGHTS messages into fds (at most PRIVSEP_RECV_FDS). */
static size_t received_fds(struct msghdr *mh, int fds[PRIVSEP_RECV_FDS])
{
	size_t n = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k && n < PRIVSEP_RECV_FDS; i++)
			memcpy(&fds[n++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	return n;
}

int privsep_recv(int sock, void *msg, size_t len, int *fds, size_t max_fds, size_t *ret_n_fds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * PRIVSEP_RECV_FDS)];
	} cm;
	struct iovec iov = { msg, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			     .msg_controllen = sizeof(cm.buf) };
	int got[PRIVSEP_RECV_FDS];
	size_t n_got;
	ssize_t n;
	int r = 0;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	n_got = received_fds(&mh, got);
	if (n == 0 && n_got == 0)
		return -ECONNRESET;
	if (mh.msg_flags & MSG_TRUNC)
		r = -EMSGSIZE;
	else if ((size_t)n != len || (mh.msg_flags & MSG_CTRUNC) || n_got > max_fds)
		r = -EBADMSG;
	for (size_t i = 0; i < n_got; i++) {
		if (r < 0)
			closep(&got[i]);
		else
			fds[i] = got[i];
	}
	if (r == 0)
		*ret_n_fds = n_got;
	return r;
}

bool privsep_ask_valid(const struct privsep_ask *a)
{
	return a->magic == PRIVSEP_MAGIC && a->type == PRIVSEP_ASK && a->scan <= 1 &&
	       a->budget_ns <= PRIVSEP_MAX_BUDGET_NS && a->pad == 0;
}

bool privsep_answer_valid(const struct privsep_answer *a, size_t n_fds)
{
	if (a->magic != PRIVSEP_MAGIC || a->stale > 1 || a->pad != 0)
		return false;
	if (a->type == PRIVSEP_NONE)
		return n_fds == 0 && a->text_len == 0 && a->gz_len == 0;
	if (a->type != PRIVSEP_BODY || a->seq == 0)
		return false;
	if (a->text_len > PRIVSEP_MAX_BODY || a->gz_len > PRIVSEP_MAX_BODY)
		return false;
	return n_fds == (a->gz_len ? 2u : 1u);
}

int privsep_memfd(const char *name, const void *data, size_t len)
{
	_cleanup_close_ int fd = -1;
	size_t off = 0;

	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, (const char *)data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		off += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, PRIVSEP_SEALS) < 0)
		return -errno;
	return TAKE_FD(fd);
}

int privsep_map(int fd, size_t len, const void **ret)
{
	struct stat st;
	void *p;
	int seals;

	if (len > PRIVSEP_MAX_BODY)
		return -EBADMSG;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0)
		return errno == EINVAL ? -EPERM : -errno; /* not a memfd: cannot be sealed */
	if ((seals & PRIVSEP_SEALS) != PRIVSEP_SEALS)
		return -EPERM;
	if (body_fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size != len)
		return -EBADMSG;
	if (len == 0) {
		*ret = NULL;
		return 0;
	}
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	*ret = p;
	return 0;
}
