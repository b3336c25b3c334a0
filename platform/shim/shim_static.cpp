// Linked into the static daemonlet-shim only (see CMakeLists.txt). libuv's
// archive brings in user, host and library look-ups (uv_os_get_passwd,
// uv_getaddrinfo, uv_dlopen) that the shim never calls; with glibc they would
// pull its NSS and dynamic-loading machinery into the binary, about 100 KiB
// of text that fault-around maps into every shim's resident set, and make
// the linker warn that they need glibc's shared libraries at run time. These
// definitions take their place and fail as a system without them would.
#include <dlfcn.h>
#include <netdb.h>
#include <pwd.h>

#include <cerrno>

extern "C" {

int getpwuid_r(uid_t, struct passwd*, char*, size_t, struct passwd** result) noexcept {
    *result = nullptr;
    return ENOSYS;
}

int getaddrinfo(const char*, const char*, const struct addrinfo*, struct addrinfo** result) noexcept {
    *result = nullptr;
    errno = ENOSYS;
    return EAI_SYSTEM;
}

void freeaddrinfo(struct addrinfo*) noexcept {}

int getnameinfo(const struct sockaddr*, socklen_t, char*, socklen_t, char*, socklen_t, int) noexcept {
    errno = ENOSYS;
    return EAI_SYSTEM;
}

void* dlopen(const char*, int) noexcept { return nullptr; }
void* dlsym(void*, const char*) noexcept { return nullptr; }
int dlclose(void*) noexcept { return 0; }
char* dlerror() noexcept {
    static char message[] = "daemonlet-shim: no dynamic loading in the static shim";
    return message;
}

}  // extern "C"
