// Test helper: the tiniest HTTP server, to run as a container for httpGet
// probes end to end (a clean Debian has no HTTP server to borrow).
//   http_serve --free-port          prints a free TCP port on 127.0.0.1
//   http_serve PORT READY_FILE [BODY_FILE]
//                                   serves 127.0.0.1:PORT: every request gets
//                                   200 "ok" while READY_FILE exists, 503 otherwise;
//                                   with BODY_FILE, 200 is its content as JSON
//                                   (a static token server for test_registry.sh)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int listen_on(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 16) != 0) {
        std::perror("http_serve: bind");
        std::exit(1);
    }
    return fd;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::strcmp(argv[1], "--free-port") == 0) {
        int fd = listen_on(0);
        sockaddr_in addr{};
        socklen_t len = sizeof addr;
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
        std::printf("%d\n", ntohs(addr.sin_port));
        return 0;
    }
    if (argc != 3 && argc != 4) {
        std::fprintf(stderr, "usage: http_serve --free-port | http_serve PORT READY_FILE [BODY_FILE]\n");
        return 2;
    }
    int fd = listen_on(std::atoi(argv[1]));
    for (;;) {
        int c = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) continue;
        std::string req;
        char buf[1024];
        while (req.find("\r\n\r\n") == std::string::npos && req.size() < 65536) {
            ssize_t n = read(c, buf, sizeof buf);
            if (n <= 0) break;
            req.append(buf, static_cast<std::size_t>(n));
        }
        struct stat st {};
        const bool ready = stat(argv[2], &st) == 0;
        std::string resp = ready ? "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
                                 : "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                   "Connection: close\r\n\r\n";
        if (ready && argc == 4) {
            std::string body;
            if (FILE* f = std::fopen(argv[3], "rb")) {
                for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) body.append(buf, n);
                std::fclose(f);
            }
            resp = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
        }
        ssize_t off = 0;
        while (off < static_cast<ssize_t>(resp.size())) {
            ssize_t n = write(c, resp.data() + off, resp.size() - static_cast<std::size_t>(off));
            if (n <= 0) break;
            off += n;
        }
        close(c);
    }
}
