/* nodelet-spawn: starts programs for the nodelet agent (CNI plugins) and reports how they ended.
 *
 * Why a helper: Node.js starts a child with fork(), which copies the page tables of the whole agent. At the agent's
 * ~90 MB that blocks its event loop ~2-3 ms per plugin (and more as it grows), twice per pod start. This helper is
 * about 1 MB, so its own fork/exec costs ~0.1 ms; the agent starts it once, while it is still small. (Not glibc's
 * posix_spawn: it would leave glibc's two internal signals ignored in the program, which a plain fork/exec from
 * containerd does not.)
 *
 * Protocol on stdin (requests) and stdout (reports); every frame is a little-endian u32 length of the rest, then
 * the rest; strings and byte strings are a u32 length, then the bytes.
 *   helper -> agent, once at start:  'H' version:u32
 *   agent -> helper:  'S' id:u32 flags:u32 argc:u32 argv... envc:u32 env("K=V")... input
 *                         start argv[0] (a path, not searched) with exactly that environment, input on its stdin;
 *                         flags bit 0: in a new session, so a signal also reaches what it started
 *                     'K' id:u32 signo:u32
 *                         signal process id (its whole session's process group when it has one)
 *   helper -> agent:  'E' id:u32 kind:u8 value:u32 truncated:u8 stdout stderr
 *                         kind 0: exited with code `value`; 1: killed by signal `value`; 2: not started, errno `value`;
 *                         sent once the process has exited and its stdout and stderr are closed (a grandchild keeping
 *                         them open delays it: the agent kills the group on its timeout); truncated bit 0/1: stdout /
 *                         stderr exceeded MAX_OUTPUT and the rest was dropped
 * The helper exits when its stdin closes or its parent dies; programs still running are left alone.
 *
 * Build: cc -O2 -Wall -Wextra -o nodelet-spawn nodelet-spawn.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROTOCOL_VERSION 1
/* CNI results are a few KiB; this only bounds a runaway program. */
#define MAX_OUTPUT (16u * 1024 * 1024)
/* Far beyond any real request (a plugin config with prevResult is a few KiB); a larger length means a broken stream. */
#define MAX_FRAME (64u * 1024 * 1024)

extern char **environ;

struct buf {
	char *data;
	size_t len, cap;
};

struct proc {
	uint32_t id;
	pid_t pid;
	int session;
	int in_fd, out_fd, err_fd;
	char *input;
	size_t input_len, input_off;
	struct buf out, err;
	unsigned truncated;
	int exited, status;
};

static struct proc *procs;
static size_t nprocs, procs_cap;
static struct buf requests;

static void die(const char *what)
{
	fprintf(stderr, "nodelet-spawn: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (q == NULL)
		die("out of memory");
	return q;
}

static void buf_append(struct buf *b, const void *data, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		b->data = xrealloc(b->data, cap);
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, n);
	b->len += n;
}

static void put_u32(struct buf *b, uint32_t v)
{
	unsigned char le[4] = { v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24 };
	buf_append(b, le, 4);
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Sends one frame to the agent; blocking, so a busy agent slows the helper instead of growing its memory. */
static void send_frame(struct buf *payload)
{
	struct buf frame = { 0 };
	put_u32(&frame, (uint32_t)payload->len);
	buf_append(&frame, payload->data, payload->len);
	size_t off = 0;
	while (off < frame.len) {
		ssize_t n = write(STDOUT_FILENO, frame.data + off, frame.len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			exit(0); /* the agent is gone */
		off += (size_t)n;
	}
	free(frame.data);
}

static void report(uint32_t id, unsigned char kind, uint32_t value, unsigned truncated, const struct buf *out, const struct buf *err)
{
	struct buf p = { 0 };
	unsigned char head[2] = { 'E', 0 };
	buf_append(&p, head, 1);
	put_u32(&p, id);
	head[1] = kind;
	buf_append(&p, &head[1], 1);
	put_u32(&p, value);
	unsigned char t = (unsigned char)truncated;
	buf_append(&p, &t, 1);
	put_u32(&p, out ? (uint32_t)out->len : 0);
	if (out)
		buf_append(&p, out->data, out->len);
	put_u32(&p, err ? (uint32_t)err->len : 0);
	if (err)
		buf_append(&p, err->data, err->len);
	send_frame(&p);
	free(p.data);
}

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

/* Reads a length-prefixed byte string at *p (within end) into a fresh NUL-terminated string. */
static char *take_string(const unsigned char **p, const unsigned char *end, size_t *len_out)
{
	if (end - *p < 4)
		return NULL;
	uint32_t n = get_u32(*p);
	*p += 4;
	if ((size_t)(end - *p) < n)
		return NULL;
	char *s = xrealloc(NULL, (size_t)n + 1);
	memcpy(s, *p, n);
	s[n] = '\0';
	*p += n;
	if (len_out)
		*len_out = n;
	return s;
}

static void free_strings(char **v)
{
	if (v == NULL)
		return;
	for (char **s = v; *s != NULL; s++)
		free(*s);
	free(v);
}

/* A NULL-terminated array of `count` strings read from *p; NULL when the frame is short. */
static char **take_strings(const unsigned char **p, const unsigned char *end)
{
	if (end - *p < 4)
		return NULL;
	uint32_t count = get_u32(*p);
	*p += 4;
	if (count > (uint32_t)(end - *p) / 4)
		return NULL;
	char **v = xrealloc(NULL, ((size_t)count + 1) * sizeof(char *));
	/* Kept NULL-terminated as it fills, so a short frame frees what was read. */
	v[0] = NULL;
	for (uint32_t i = 0; i < count; i++) {
		v[i] = take_string(p, end, NULL);
		if (v[i] == NULL) {
			free_strings(v);
			return NULL;
		}
		v[i + 1] = NULL;
	}
	return v;
}

static void set_nonblocking(int fd)
{
	int flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		die("fcntl");
}

/*
 * In the forked child: the pipes become stdin/stdout/stderr, every other descriptor is closed, every signal is back
 * to its default and none is blocked (the helper blocks SIGCHLD and ignores SIGPIPE), as a program started by a
 * plain fork/exec from containerd would have it. Only system calls from here on. On failure the errno goes to the
 * status pipe.
 */
static void __attribute__((noreturn)) exec_child(int in, int out, int err, int status, int session, char **argv, char **envp)
{
	if (dup2(in, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0)
		goto fail;
	if (session && setsid() < 0)
		goto fail;
	/* The raw call: glibc's sigaction refuses its two internal signals (32, 33), which must be reset too. An all-zero
	 * kernel sigaction is SIG_DFL with no flags and an empty mask on every architecture's layout. */
	unsigned long kernel_sigaction[4] = { 0 };
	for (int sig = 1; sig <= 64; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			syscall(SYS_rt_sigaction, sig, kernel_sigaction, NULL, 8);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Nothing else of the helper's (or what the agent leaked into it) reaches the program: all close at exec (the
	 * status pipe too, which is how the helper learns the exec happened). Before Linux 5.9, close them one by one. */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		for (int fd = 3; fd < 65536; fd++)
			if (fd != status)
				close(fd);
	execve(argv[0], argv, envp);
fail:;
	int e = errno;
	(void)!write(status, &e, sizeof e);
	_exit(127);
}

static void start(uint32_t id, uint32_t flags, char **argv, char **envp, char *input, size_t input_len)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	if (argv[0] == NULL) {
		report(id, 2, EINVAL, 0, NULL, NULL);
		free(input);
		return;
	}
	/* O_CLOEXEC everywhere: the program gets only the three descriptors dup2'd below. */
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		int e = errno;
		close_fd(&in[0]), close_fd(&in[1]), close_fd(&out[0]), close_fd(&out[1]), close_fd(&err[0]), close_fd(&err[1]);
		report(id, 2, (uint32_t)e, 0, NULL, NULL);
		free(input);
		return;
	}
	int status_pipe[2];
	if (pipe2(status_pipe, O_CLOEXEC) < 0) {
		int e = errno;
		close_fd(&in[0]), close_fd(&in[1]), close_fd(&out[0]), close_fd(&out[1]), close_fd(&err[0]), close_fd(&err[1]);
		report(id, 2, (uint32_t)e, 0, NULL, NULL);
		free(input);
		return;
	}
	pid_t pid = fork();
	if (pid == 0)
		exec_child(in[0], out[1], err[1], status_pipe[1], flags & 1, argv, envp);
	int spawn_errno = pid < 0 ? errno : 0;
	close_fd(&status_pipe[1]);
	close_fd(&in[0]), close_fd(&out[1]), close_fd(&err[1]);
	/* Blocks until the child has exec'd (EOF: the pipe was close-on-exec) or failed (its errno). */
	if (pid > 0) {
		ssize_t n;
		int e;
		while ((n = read(status_pipe[0], &e, sizeof e)) < 0 && errno == EINTR)
			;
		if (n == (ssize_t)sizeof e) {
			spawn_errno = e;
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
		}
	}
	close_fd(&status_pipe[0]);
	if (spawn_errno != 0) {
		close_fd(&in[1]), close_fd(&out[0]), close_fd(&err[0]);
		report(id, 2, (uint32_t)spawn_errno, 0, NULL, NULL);
		free(input);
		return;
	}
	set_nonblocking(in[1]);
	set_nonblocking(out[0]);
	set_nonblocking(err[0]);
	if (nprocs == procs_cap) {
		procs_cap = procs_cap ? procs_cap * 2 : 16;
		procs = xrealloc(procs, procs_cap * sizeof *procs);
	}
	struct proc *p = &procs[nprocs++];
	memset(p, 0, sizeof *p);
	p->id = id;
	p->pid = pid;
	p->session = flags & 1;
	p->in_fd = in[1];
	p->out_fd = out[0];
	p->err_fd = err[0];
	p->input = input;
	p->input_len = input_len;
	if (input_len == 0)
		close_fd(&p->in_fd);
}

static void signal_proc(uint32_t id, uint32_t signo)
{
	for (size_t i = 0; i < nprocs; i++) {
		struct proc *p = &procs[i];
		if (p->id != id)
			continue;
		/* A session's group outlives its leader while a grandchild holds the pipes: signal it even then. */
		if (p->session)
			kill(-p->pid, (int)signo);
		else if (!p->exited)
			kill(p->pid, (int)signo);
		return;
	}
}

/* Handles one complete request frame; a malformed one means the stream is broken, so the helper stops. */
static void handle_request(const unsigned char *p, const unsigned char *end)
{
	if (end - p < 9) {
		fprintf(stderr, "nodelet-spawn: short request\n");
		exit(1);
	}
	unsigned char op = *p++;
	uint32_t id = get_u32(p);
	uint32_t arg = get_u32(p + 4);
	p += 8;
	if (op == 'K') {
		signal_proc(id, arg);
		return;
	}
	if (op != 'S') {
		fprintf(stderr, "nodelet-spawn: unknown request %d\n", op);
		exit(1);
	}
	char **argv = take_strings(&p, end);
	char **envp = argv ? take_strings(&p, end) : NULL;
	size_t input_len = 0;
	char *input = envp ? take_string(&p, end, &input_len) : NULL;
	if (input == NULL) {
		fprintf(stderr, "nodelet-spawn: malformed start request %u\n", id);
		exit(1);
	}
	start(id, arg, argv, envp, input, input_len);
	free_strings(argv);
	free_strings(envp);
}

static void read_requests(int *open)
{
	char chunk[65536];
	for (;;) {
		ssize_t n = read(STDIN_FILENO, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			*open = 0; /* the agent closed the stream, or it broke */
			return;
		}
		buf_append(&requests, chunk, (size_t)n);
	}
	size_t off = 0;
	while (requests.len - off >= 4) {
		uint32_t len = get_u32((unsigned char *)requests.data + off);
		if (len > MAX_FRAME) {
			fprintf(stderr, "nodelet-spawn: request of %u bytes refused\n", len);
			exit(1);
		}
		if (requests.len - off - 4 < len)
			break;
		const unsigned char *frame = (unsigned char *)requests.data + off + 4;
		handle_request(frame, frame + len);
		off += 4 + (size_t)len;
	}
	memmove(requests.data, requests.data + off, requests.len - off);
	requests.len -= off;
}

static void drain_output(int *fd, struct buf *b, unsigned *truncated, unsigned bit)
{
	char chunk[65536];
	for (;;) {
		ssize_t n = read(*fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close_fd(fd);
			return;
		}
		size_t room = b->len < MAX_OUTPUT ? MAX_OUTPUT - b->len : 0;
		if ((size_t)n > room)
			*truncated |= bit;
		buf_append(b, chunk, (size_t)n < room ? (size_t)n : room);
	}
}

static void feed_input(struct proc *p)
{
	while (p->input_off < p->input_len) {
		ssize_t n = write(p->in_fd, p->input + p->input_off, p->input_len - p->input_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0)
			break; /* EPIPE: the program does not read its stdin, which is its business */
		p->input_off += (size_t)n;
	}
	close_fd(&p->in_fd);
}

static void reap(int sfd)
{
	struct signalfd_siginfo si;
	while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
		;
	int status;
	pid_t pid;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (size_t i = 0; i < nprocs; i++) {
			if (procs[i].pid == pid) {
				procs[i].exited = 1;
				procs[i].status = status;
				break;
			}
		}
	}
}

/* Reports and forgets the processes that have exited and closed their output. */
static void report_finished(void)
{
	for (size_t i = 0; i < nprocs;) {
		struct proc *p = &procs[i];
		if (!p->exited || p->out_fd >= 0 || p->err_fd >= 0) {
			i++;
			continue;
		}
		close_fd(&p->in_fd);
		if (WIFSIGNALED(p->status))
			report(p->id, 1, (uint32_t)WTERMSIG(p->status), p->truncated, &p->out, &p->err);
		else
			report(p->id, 0, (uint32_t)WEXITSTATUS(p->status), p->truncated, &p->out, &p->err);
		free(p->input);
		free(p->out.data);
		free(p->err.data);
		procs[i] = procs[--nprocs];
	}
}

int main(void)
{
	/* Dies with the agent; if the agent is already gone, stop now. */
	pid_t parent = getppid();
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		die("prctl");
	if (getppid() != parent)
		return 0;
	signal(SIGPIPE, SIG_IGN);
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &chld, NULL) < 0)
		die("sigprocmask");
	int sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0)
		die("signalfd");
	/* The agent's ends of our stdio must not leak into the programs (they get their own three). */
	fcntl(STDIN_FILENO, F_SETFD, FD_CLOEXEC);
	fcntl(STDOUT_FILENO, F_SETFD, FD_CLOEXEC);
	set_nonblocking(STDIN_FILENO);

	struct buf hello = { 0 };
	unsigned char h = 'H';
	buf_append(&hello, &h, 1);
	put_u32(&hello, PROTOCOL_VERSION);
	send_frame(&hello);
	free(hello.data);

	struct pollfd *fds = NULL;
	size_t fds_cap = 0;
	int requests_open = 1;
	while (requests_open) {
		size_t need = 2 + 3 * nprocs;
		if (need > fds_cap) {
			fds_cap = need * 2;
			fds = xrealloc(fds, fds_cap * sizeof *fds);
		}
		fds[0] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
		fds[1] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		for (size_t i = 0; i < nprocs; i++) {
			/* A negative fd is skipped by poll. */
			fds[2 + 3 * i] = (struct pollfd){ .fd = procs[i].in_fd, .events = POLLOUT };
			fds[3 + 3 * i] = (struct pollfd){ .fd = procs[i].out_fd, .events = POLLIN };
			fds[4 + 3 * i] = (struct pollfd){ .fd = procs[i].err_fd, .events = POLLIN };
		}
		size_t polled = nprocs;
		if (poll(fds, 2 + 3 * polled, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		/* Processes first: a request may add entries (and move the array), after which the indexes are stale. */
		for (size_t i = 0; i < polled; i++) {
			struct proc *p = &procs[i];
			if (fds[2 + 3 * i].revents)
				feed_input(p);
			if (fds[3 + 3 * i].revents)
				drain_output(&p->out_fd, &p->out, &p->truncated, 1);
			if (fds[4 + 3 * i].revents)
				drain_output(&p->err_fd, &p->err, &p->truncated, 2);
		}
		if (fds[1].revents)
			reap(sfd);
		report_finished();
		if (fds[0].revents)
			read_requests(&requests_open);
	}
	return 0;
}
