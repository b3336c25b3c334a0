// Test helper: listens on an AF_UNIX datagram socket as systemd does for
// NOTIFY_SOCKET and appends every message, one per line, to a file.
//   notify_listen SOCKET_PATH OUT_FILE
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: notify_listen SOCKET OUT\n");
        return 2;
    }
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, argv[1], sizeof addr.sun_path - 1);
    unlink(argv[1]);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        std::perror("notify_listen: bind");
        return 1;
    }
    char buf[4096];
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
        if (n <= 0) continue;
        std::string msg(buf, static_cast<std::size_t>(n));
        for (auto& c : msg)
            if (c == '\n') c = '|';
        FILE* out = std::fopen(argv[2], "a");
        if (!out) return 1;
        std::fprintf(out, "%s\n", msg.c_str());
        std::fclose(out);
    }
}
