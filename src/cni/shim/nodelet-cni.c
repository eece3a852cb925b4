/* nodelet-cni: the CNI plugin containerd runs; it forwards each call to the nodelet agent over a unix socket.
 *
 * Protocol (one request per connection): the shim sends `KEY=VALUE\n` for each CNI_* variable of its
 * environment, an empty line, then its stdin bytes, and shuts down its write side. The agent answers with the
 * decimal exit code and `\n`, then the bytes to print on stdout, and closes.
 *
 * The shim stays tiny so containerd does not pay an interpreter start per sandbox. When the agent cannot be
 * reached: DEL runs the config's "localExec" program (same environment, same stdin) so sandboxes can always be
 * removed; VERSION is answered here in any case; anything else fails with CNI error code 11 (try again later).
 *
 * Build: cc -O2 -Wall -Wextra -o nodelet-cni nodelet-cni.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_AGENT_SOCKET "/run/nodelet/cni.sock"
#define SUPPORTED_VERSIONS "[\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\"]"
/* A network config with prevResult is a few KiB; 1 MiB is far beyond any real one. */
#define MAX_STDIN (1024 * 1024)
/* The agent bounds its own work below this; the shim must never hang a sandbox forever. */
#define RESPONSE_TIMEOUT_MS 120000
#define CONNECT_TIMEOUT_S 10
#define MAX_ENV_LINE 8192

#define CNI_ERR_DECODE 6
#define CNI_ERR_IO 5
#define CNI_ERR_ENV 4
#define CNI_ERR_TRY_AGAIN 11

extern char **environ;

static char stdin_buf[MAX_STDIN + 1];
static size_t stdin_len;
static char agent_socket[PATH_MAX] = DEFAULT_AGENT_SOCKET;
static char local_exec[PATH_MAX];
static char cni_version[32] = "1.0.0";

/* ---- output helpers ---- */

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Appends `s` to out (capacity cap, NUL-terminated) as JSON string content; truncates rather than overflows. */
static void json_escape_into(char *out, size_t cap, const char *s)
{
	size_t o = strlen(out);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		char tmp[8];
		const char *piece = tmp;
		if (c == '"')
			piece = "\\\"";
		else if (c == '\\')
			piece = "\\\\";
		else if (c == '\n')
			piece = "\\n";
		else if (c < 0x20)
			snprintf(tmp, sizeof(tmp), "\\u%04x", c);
		else {
			tmp[0] = (char)c;
			tmp[1] = '\0';
		}
		size_t plen = strlen(piece);
		if (o + plen + 1 > cap)
			break;
		memcpy(out + o, piece, plen);
		o += plen;
		out[o] = '\0';
	}
}

/* Prints a CNI error result on stdout and returns the exit code to use. */
static int cni_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int cni_error(int code, const char *fmt, ...)
{
	char msg[1024];
	char esc[2048] = "";
	char out[2304];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_escape_into(esc, sizeof(esc), msg);
	int n = snprintf(out, sizeof(out), "{\"cniVersion\":\"%s\",\"code\":%d,\"msg\":\"%s\"}\n", cni_version, code, esc);
	if (n > 0)
		(void)write_all(STDOUT_FILENO, out, (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1);
	return 1;
}

/* ---- stdin ---- */

static int read_stdin(void)
{
	for (;;) {
		if (stdin_len == MAX_STDIN) {
			char probe;
			ssize_t n = read(STDIN_FILENO, &probe, 1);
			if (n == 0)
				break;
			if (n < 0 && errno == EINTR)
				continue;
			errno = n < 0 ? errno : EFBIG;
			return -1;
		}
		ssize_t n = read(STDIN_FILENO, stdin_buf + stdin_len, MAX_STDIN - stdin_len);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* containerd always gives stdin; a closed one (EBADF) just means no config. */
			if (errno == EBADF)
				break;
			return -1;
		}
		stdin_len += (size_t)n;
	}
	stdin_buf[stdin_len] = '\0';
	return 0;
}

/* ---- a small JSON reader: only the top-level string members the shim needs ---- */

struct scanner {
	const char *p;
	const char *end;
};

static void skip_ws(struct scanner *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* Appends one byte to the decode buffer; fails when full (the value is then unusable, not truncated). */
static int put(char *out, size_t cap, size_t *o, char c)
{
	if (out == NULL)
		return 0;
	if (*o + 1 >= cap)
		return -1;
	out[(*o)++] = c;
	return 0;
}

/* Reads a JSON string at s->p (on its opening quote); decodes it into out (NUL-terminated) when out is set. */
static int scan_string(struct scanner *s, char *out, size_t cap)
{
	size_t o = 0;
	if (s->p >= s->end || *s->p != '"')
		return -1;
	s->p++;
	while (s->p < s->end) {
		unsigned char c = (unsigned char)*s->p++;
		if (c == '"') {
			if (out != NULL)
				out[o] = '\0';
			return 0;
		}
		if (c < 0x20)
			return -1;
		if (c != '\\') {
			if (put(out, cap, &o, (char)c) < 0)
				return -1;
			continue;
		}
		if (s->p >= s->end)
			return -1;
		char e = *s->p++;
		char simple = 0;
		switch (e) {
		case '"': simple = '"'; break;
		case '\\': simple = '\\'; break;
		case '/': simple = '/'; break;
		case 'b': simple = '\b'; break;
		case 'f': simple = '\f'; break;
		case 'n': simple = '\n'; break;
		case 'r': simple = '\r'; break;
		case 't': simple = '\t'; break;
		case 'u': break;
		default: return -1;
		}
		if (simple != 0) {
			if (put(out, cap, &o, simple) < 0)
				return -1;
			continue;
		}
		unsigned cp;
		if (s->end - s->p < 4 || hex4(s->p, &cp) < 0)
			return -1;
		s->p += 4;
		if (cp >= 0xD800 && cp <= 0xDBFF) {
			unsigned lo;
			if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u' || hex4(s->p + 2, &lo) < 0 ||
			    lo < 0xDC00 || lo > 0xDFFF)
				return -1;
			s->p += 6;
			cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
		} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
			return -1;
		}
		/* A NUL would silently cut a path short. */
		if (cp == 0)
			return -1;
		char utf8[4];
		int len;
		if (cp < 0x80) {
			utf8[0] = (char)cp;
			len = 1;
		} else if (cp < 0x800) {
			utf8[0] = (char)(0xC0 | (cp >> 6));
			utf8[1] = (char)(0x80 | (cp & 0x3F));
			len = 2;
		} else if (cp < 0x10000) {
			utf8[0] = (char)(0xE0 | (cp >> 12));
			utf8[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
			utf8[2] = (char)(0x80 | (cp & 0x3F));
			len = 3;
		} else {
			utf8[0] = (char)(0xF0 | (cp >> 18));
			utf8[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
			utf8[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
			utf8[3] = (char)(0x80 | (cp & 0x3F));
			len = 4;
		}
		for (int i = 0; i < len; i++)
			if (put(out, cap, &o, utf8[i]) < 0)
				return -1;
	}
	return -1;
}

/* Skips one JSON value (string, number, literal, object, array); depth bounds nesting. */
static int skip_value(struct scanner *s, int depth)
{
	if (depth > 64)
		return -1;
	skip_ws(s);
	if (s->p >= s->end)
		return -1;
	char c = *s->p;
	if (c == '"')
		return scan_string(s, NULL, 0);
	if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';
		s->p++;
		skip_ws(s);
		if (s->p < s->end && *s->p == close) {
			s->p++;
			return 0;
		}
		for (;;) {
			if (c == '{') {
				skip_ws(s);
				if (scan_string(s, NULL, 0) < 0)
					return -1;
				skip_ws(s);
				if (s->p >= s->end || *s->p != ':')
					return -1;
				s->p++;
			}
			if (skip_value(s, depth + 1) < 0)
				return -1;
			skip_ws(s);
			if (s->p >= s->end)
				return -1;
			if (*s->p == ',') {
				s->p++;
				continue;
			}
			if (*s->p == close) {
				s->p++;
				return 0;
			}
			return -1;
		}
	}
	/* number, true, false, null: a run of these characters */
	const char *start = s->p;
	while (s->p < s->end && *s->p != '\0' && strchr("+-.0123456789eEtrufalsn", *s->p) != NULL)
		s->p++;
	return s->p > start ? 0 : -1;
}

/* Reads agentSocket, localExec and cniVersion from the top-level object of the config. */
static int parse_config(void)
{
	struct scanner s = { stdin_buf, stdin_buf + stdin_len };
	skip_ws(&s);
	if (s.p >= s.end || *s.p != '{')
		return -1;
	s.p++;
	skip_ws(&s);
	if (s.p < s.end && *s.p == '}')
		return 0;
	for (;;) {
		char key[64];
		skip_ws(&s);
		/* Keys longer than the buffer are not ones we look for: skip them. */
		struct scanner save = s;
		if (scan_string(&s, key, sizeof(key)) < 0) {
			s = save;
			if (scan_string(&s, NULL, 0) < 0)
				return -1;
			key[0] = '\0';
		}
		skip_ws(&s);
		if (s.p >= s.end || *s.p != ':')
			return -1;
		s.p++;
		skip_ws(&s);
		char *dest = NULL;
		size_t cap = 0;
		if (strcmp(key, "agentSocket") == 0) {
			dest = agent_socket;
			cap = sizeof(agent_socket);
		} else if (strcmp(key, "localExec") == 0) {
			dest = local_exec;
			cap = sizeof(local_exec);
		} else if (strcmp(key, "cniVersion") == 0) {
			dest = cni_version;
			cap = sizeof(cni_version);
		}
		if (dest != NULL && s.p < s.end && *s.p == '"') {
			char value[PATH_MAX];
			if (scan_string(&s, value, cap < sizeof(value) ? cap : sizeof(value)) < 0)
				return -1;
			memcpy(dest, value, strlen(value) + 1);
		} else if (skip_value(&s, 1) < 0) {
			return -1;
		}
		skip_ws(&s);
		if (s.p >= s.end)
			return -1;
		if (*s.p == ',') {
			s.p++;
			continue;
		}
		if (*s.p == '}')
			return 0;
		return -1;
	}
}

/* ---- talking to the agent ---- */

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for `events` or the deadline passes (errno ETIMEDOUT). */
static int wait_fd(int fd, short events, long long deadline)
{
	for (;;) {
		long long left = deadline - now_ms();
		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		struct pollfd pfd = { .fd = fd, .events = events, .revents = 0 };
		int r = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

static int send_all(int fd, const char *buf, size_t len, long long deadline)
{
	while (len > 0) {
		if (wait_fd(fd, POLLOUT, deadline) < 0)
			return -1;
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int connect_agent(void)
{
	struct sockaddr_un addr;
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	if (strlen(agent_socket) >= sizeof(addr.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(addr.sun_path, agent_socket, strlen(agent_socket) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* Bounds a blocking connect when the agent's backlog is full. */
	struct timeval tv = { .tv_sec = CONNECT_TIMEOUT_S, .tv_usec = 0 };
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		if (errno == EINTR)
			continue;
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

/*
 * Sends the request and relays the answer. Returns the agent's exit code, or -1 when no answer (status line)
 * arrived; then nothing has been written to stdout and `why` says what happened.
 */
static int forward(int fd, char *why, size_t why_cap)
{
	long long deadline = now_ms() + RESPONSE_TIMEOUT_MS;

	for (char **e = environ; *e != NULL; e++) {
		if (strncmp(*e, "CNI_", 4) != 0 || strchr(*e, '=') == NULL)
			continue;
		size_t len = strlen(*e);
		/* A newline would break the line protocol; such a value is not a valid CNI parameter anyway. */
		if (len >= MAX_ENV_LINE || strchr(*e, '\n') != NULL)
			continue;
		char line[MAX_ENV_LINE + 1];
		memcpy(line, *e, len);
		line[len] = '\n';
		if (send_all(fd, line, len + 1, deadline) < 0)
			goto send_failed;
	}
	if (send_all(fd, "\n", 1, deadline) < 0 || send_all(fd, stdin_buf, stdin_len, deadline) < 0)
		goto send_failed;
	(void)shutdown(fd, SHUT_WR);

	char status[16];
	size_t status_len = 0;
	int have_status = 0;
	int code = 0;
	char buf[65536];
	for (;;) {
		if (wait_fd(fd, POLLIN, deadline) < 0) {
			if (!have_status) {
				snprintf(why, why_cap, "no answer within %d s: %s", RESPONSE_TIMEOUT_MS / 1000, strerror(errno));
				return -1;
			}
			/* Part of the output is out already; the caller must see a failure. */
			return code != 0 ? code : 1;
		}
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			if (!have_status) {
				snprintf(why, why_cap, "reading the answer: %s", strerror(errno));
				return -1;
			}
			return code != 0 ? code : 1;
		}
		if (n == 0)
			break;
		size_t off = 0;
		while (!have_status && off < (size_t)n) {
			char c = buf[off++];
			if (c == '\n') {
				status[status_len] = '\0';
				char *end = NULL;
				long v = strtol(status, &end, 10);
				if (status_len == 0 || *end != '\0' || v < 0 || v > 255) {
					snprintf(why, why_cap, "malformed answer (status line \"%s\")", status);
					return -1;
				}
				code = (int)v;
				have_status = 1;
			} else if (status_len + 1 < sizeof(status)) {
				status[status_len++] = c;
			} else {
				snprintf(why, why_cap, "malformed answer (status line too long)");
				return -1;
			}
		}
		if (have_status && off < (size_t)n && write_all(STDOUT_FILENO, buf + off, (size_t)n - off) < 0)
			return 1;
	}
	if (!have_status) {
		snprintf(why, why_cap, "the agent closed the connection without answering");
		return -1;
	}
	return code;

send_failed:
	snprintf(why, why_cap, "sending the request: %s", strerror(errno));
	return -1;
}

/* ---- DEL without the agent ---- */

static int run_local_exec(const char *reason)
{
	if (local_exec[0] == '\0')
		return cni_error(CNI_ERR_TRY_AGAIN, "nodelet agent not reachable at %s (%s) and no localExec configured",
				 agent_socket, reason);
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return cni_error(CNI_ERR_IO, "pipe for localExec: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		return cni_error(CNI_ERR_IO, "fork for localExec: %s", strerror(errno));
	if (pid == 0) {
		/* An ignored SIGPIPE would be inherited across exec. */
		signal(SIGPIPE, SIG_DFL);
		if (dup2(p[0], STDIN_FILENO) < 0)
			_exit(cni_error(CNI_ERR_IO, "dup2 for localExec: %s", strerror(errno)));
		char *const argv[] = { local_exec, NULL };
		execv(local_exec, argv);
		_exit(cni_error(CNI_ERR_TRY_AGAIN, "nodelet agent not reachable at %s and localExec %s failed to start: %s",
				agent_socket, local_exec, strerror(errno)));
	}
	close(p[0]);
	/* The child may exit without reading everything; that must not kill us (SIGPIPE is ignored). */
	(void)write_all(p[1], stdin_buf, stdin_len);
	close(p[1]);
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return cni_error(CNI_ERR_IO, "waiting for localExec: %s", strerror(errno));
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return cni_error(CNI_ERR_TRY_AGAIN, "localExec %s was killed by signal %d", local_exec,
			 WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);

	if (read_stdin() < 0)
		return cni_error(CNI_ERR_IO, "reading the network configuration from stdin: %s", strerror(errno));
	int parsed = parse_config();

	const char *command = getenv("CNI_COMMAND");
	if (command == NULL || command[0] == '\0')
		return cni_error(CNI_ERR_ENV, "CNI_COMMAND is not set");

	if (strcmp(command, "VERSION") == 0) {
		char out[256];
		int n = snprintf(out, sizeof(out), "{\"cniVersion\":\"%s\",\"supportedVersions\":%s}\n", cni_version,
				 SUPPORTED_VERSIONS);
		return write_all(STDOUT_FILENO, out, (size_t)n) < 0 ? 1 : 0;
	}
	if (parsed < 0)
		return cni_error(CNI_ERR_DECODE, "the network configuration on stdin is not a JSON object this shim can read");

	int is_del = strcmp(command, "DEL") == 0;
	char why[512];
	int fd = connect_agent();
	if (fd < 0) {
		snprintf(why, sizeof(why), "%s", strerror(errno));
		if (is_del)
			return run_local_exec(why);
		return cni_error(CNI_ERR_TRY_AGAIN, "nodelet agent not reachable at %s", agent_socket);
	}
	int code = forward(fd, why, sizeof(why));
	close(fd);
	if (code >= 0)
		return code;
	/* DEL is idempotent: when the agent failed mid-request, the fallback can safely do it again. */
	if (is_del)
		return run_local_exec(why);
	return cni_error(CNI_ERR_TRY_AGAIN, "nodelet agent at %s: %s", agent_socket, why);
}
