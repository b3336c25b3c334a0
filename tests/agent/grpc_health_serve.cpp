// Test helper: a real gRPC server with grpc++'s default health service
// (grpc.health.v1.Health), to run as a container for grpc probes end to end.
//   grpc_health_serve PORT   serves 127.0.0.1:PORT. The service "ready"
//                            starts NOT_SERVING, "live" SERVING ("" is
//                            SERVING, as grpc++ sets it); SIGUSR1 makes
//                            "ready" SERVING, SIGUSR2 makes "live"
//                            NOT_SERVING; SIGTERM stops the server.
// The signals are taken by sigwait on the main thread (blocked in every
// thread before gRPC starts its own), so the flips happen in order and no
// handler runs inside gRPC.
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <csignal>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: grpc_health_serve PORT\n");
        return 2;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);

    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    // grpc++ serves nothing, not even the health service, without a
    // service of its own to poll for: a generic one, answering
    // UNIMPLEMENTED to any other method.
    grpc::CallbackGenericService generic;
    builder.RegisterCallbackGenericService(&generic);
    int bound = 0;
    builder.AddListeningPort(std::string("127.0.0.1:") + argv[1], grpc::InsecureServerCredentials(), &bound);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (!server || bound == 0) {
        std::fprintf(stderr, "grpc_health_serve: cannot listen on 127.0.0.1:%s\n", argv[1]);
        return 1;
    }
    grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
    health->SetServingStatus("ready", false);
    health->SetServingStatus("live", true);
    std::fprintf(stderr, "grpc_health_serve: listening on 127.0.0.1:%d\n", bound);
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) break;
        if (sig == SIGUSR1) {
            health->SetServingStatus("ready", true);
        } else if (sig == SIGUSR2) {
            health->SetServingStatus("live", false);
        } else {
            break;
        }
    }
    server->Shutdown();
    return 0;
}
