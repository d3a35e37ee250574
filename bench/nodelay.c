/* TCP_NODELAY on every socket a server accepts, to measure Spin with it
 * (docs/performance.md): cc -shared -fPIC -o build/nodelay.so bench/nodelay.c -ldl
 * then LD_PRELOAD=$PWD/build/nodelay.so SPIN=... bench/run.py */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

typedef int (*accept4_fn)(int, struct sockaddr *, socklen_t *, int);

int accept4(int s, struct sockaddr *a, socklen_t *l, int flags) {
    int fd = ((accept4_fn)dlsym(RTLD_NEXT, "accept4"))(s, a, l, flags), one = 1;
    if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

int accept(int s, struct sockaddr *a, socklen_t *l) { return accept4(s, a, l, 0); }
