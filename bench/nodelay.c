/* Sets TCP_NODELAY on every socket a server accepts, for measuring Spin with
 * it (docs/performance.md, "Spin main's 40 ms tail"):
 *   cc -shared -fPIC -o build/nodelay.so bench/nodelay.c -ldl
 *   LD_PRELOAD=$PWD/build/nodelay.so SPIN=... bench/run.py */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

static int nodelay(int fd) {
    int one = 1;
    if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

int accept(int s, struct sockaddr *a, socklen_t *l) {
    static int (*real)(int, struct sockaddr *, socklen_t *);
    if (!real) real = dlsym(RTLD_NEXT, "accept");
    return nodelay(real(s, a, l));
}

int accept4(int s, struct sockaddr *a, socklen_t *l, int flags) {
    static int (*real)(int, struct sockaddr *, socklen_t *, int);
    if (!real) real = dlsym(RTLD_NEXT, "accept4");
    return nodelay(real(s, a, l, flags));
}
