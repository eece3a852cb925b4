/* pause: PID 1 of nodelet's pod sandboxes — holds the pod's namespaces open, reaps orphans, exits on request. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_terminate(int sig) {
    (void)sig;
    _exit(0);
}

/* As PID 1 of the sandbox every orphaned process of the pod is re-parented to us; reap them all so
   no zombies pile up. Loop because several SIGCHLDs can coalesce into one delivery. */
static void on_child(int sig) {
    (void)sig;
    int saved = errno;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    errno = saved;
}

static int install(int sig, void (*handler)(int)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART | (sig == SIGCHLD ? SA_NOCLDSTOP : 0);
    sigemptyset(&sa.sa_mask);
    return sigaction(sig, &sa, NULL);
}

int main(void) {
    /* PID 1 ignores signals without a handler, so SIGTERM/SIGINT need explicit handlers to stop the sandbox. */
    if (install(SIGTERM, on_terminate) != 0 || install(SIGINT, on_terminate) != 0 ||
        install(SIGCHLD, on_child) != 0) {
        static const char msg[] = "pause: cannot install signal handlers\n";
        (void)write(2, msg, sizeof msg - 1);
        return 1;
    }
    for (;;) {
        pause();
    }
}
