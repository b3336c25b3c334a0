// CppUTest entry point. Leak detection stays on in plain builds; under the
// sanitizers ASan owns operator new, so CppUTest's overloads are turned off.
#include <CppUTest/CommandLineTestRunner.h>
#include <CppUTest/MemoryLeakWarningPlugin.h>

int main(int argc, char** argv) {
#ifdef DAEMONLET_SANITIZE
    MemoryLeakWarningPlugin::turnOffNewDeleteOverloads();
#endif
    return CommandLineTestRunner::RunAllTests(argc, argv);
}
