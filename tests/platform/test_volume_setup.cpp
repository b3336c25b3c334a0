// set_up_host_path on a real directory: what the kubelet's hostPath plugin
// (pkg/volume/hostpath, MakeDir) and containerd's WithMounts (a missing
// bind-mount source, os.MkdirAll(src, 0755)) make on the host.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "platform/volume_setup.h"

#include <CppUTest/TestHarness.h>

using namespace daemonlet;
namespace fs = std::filesystem;

TEST_GROUP(VolumeSetup) {
    std::string dir;
    mode_t old_umask = 0;
    void setup() override {
        char templ[] = "/tmp/daemonlet-volume-XXXXXX";
        dir = ::mkdtemp(templ);
        old_umask = ::umask(0077);  // the unit's UMask
    }
    void teardown() override {
        ::umask(old_umask);
        fs::remove_all(dir);
    }
    static Volume host_path(const std::string& path, const std::string& type) {
        Volume v;
        v.name = "v";
        v.source = Volume::Source::HostPath;
        v.host_path = path;
        v.host_path_type = type;
        return v;
    }
    static unsigned mode_of(const std::string& path) {
        struct stat st {};
        return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
    }
};

TEST(VolumeSetup, AMissingTypelessPathIsMadeADirectory0755UnderTheUnitsUmask) {
    const std::string path = dir + "/run/flannel";
    CHECK_TRUE(platform::set_up_host_path(host_path(path, "")).ok());
    CHECK_TRUE(fs::is_directory(path));
    LONGS_EQUAL(0755, mode_of(path));
    CHECK_TRUE(platform::set_up_host_path(host_path(dir + "/d", "DirectoryOrCreate")).ok());
    LONGS_EQUAL(0755, mode_of(dir + "/d"));
}

TEST(VolumeSetup, ATypelessDanglingSymlinkIsAnErrorAndItsTargetIsNotTouched) {
    const std::string link = dir + "/link";
    fs::create_symlink(dir + "/nowhere", link);
    auto s = platform::set_up_host_path(host_path(link, ""));
    CHECK_FALSE(s.ok());
    CHECK_TRUE(s.error().message.find(link) != std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/nowhere"));
    CHECK_TRUE(fs::is_symlink(link));
}

// hostpath makeFile: os.OpenFile(path, O_CREATE, 0644), no MkdirAll: a
// missing parent fails the mount ("FileOrCreate mode does not create the
// parent directory of the file"), named; once the parent is there, a retry
// makes the file.
TEST(VolumeSetup, FileOrCreateMakesNoParentDirectory) {
    const std::string path = dir + "/run/x.lock";
    auto s = platform::set_up_host_path(host_path(path, "FileOrCreate"));
    CHECK_FALSE(s.ok());
    STRCMP_EQUAL(
        ("MountVolume.SetUp failed for volume \"v\" : open " + path + ": no such file or directory").c_str(),
        s.error().message.c_str());
    CHECK_FALSE(fs::exists(dir + "/run"));
    fs::create_directory(dir + "/run");
    CHECK_TRUE(platform::set_up_host_path(host_path(path, "FileOrCreate")).ok());
    CHECK_TRUE(fs::is_regular_file(path));
    LONGS_EQUAL(0644, mode_of(path));  // the kubelet's mode, whatever the unit's umask
}

// makeFile's os.OpenFile(O_CREATE) follows a dangling symlink and makes its
// target (a board's /run/xtables.lock linked elsewhere); an existing file is
// left with its mode.
TEST(VolumeSetup, FileOrCreateMakesADanglingLinksTargetAndKeepsAnExistingFile) {
    fs::create_directory(dir + "/state");
    const std::string link = dir + "/x.lock";
    fs::create_symlink(dir + "/state/x.lock", link);
    CHECK_TRUE(platform::set_up_host_path(host_path(link, "FileOrCreate")).ok());
    CHECK_TRUE(fs::is_regular_file(dir + "/state/x.lock"));
    const std::string kept = dir + "/kept";
    { std::ofstream(kept) << "x"; }
    fs::permissions(kept, fs::perms::owner_read | fs::perms::owner_write);
    CHECK_TRUE(platform::set_up_host_path(host_path(kept, "FileOrCreate")).ok());
    LONGS_EQUAL(0600, mode_of(kept));
}
