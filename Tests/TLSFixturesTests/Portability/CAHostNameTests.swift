import Foundation
import Testing
@testable import TLSFixtures

/// A new CA is named "swift-tls-fixtures CA USER@HOST". HOST came from `ProcessInfo.processInfo.hostName`, which on
/// Darwin asks NSHost: a reverse-DNS lookup of every address the machine has, blocking until it answers (about 35 s a
/// process on GitHub's macOS runners, actions/runner-images#14568), paid by every test that makes a temporary store.
/// The name now comes from gethostname(). `scripts/lint-darwin.py` (rule `host-lookup`, tested in DarwinLintTests)
/// keeps Foundation's host APIs out of the sources; this suite shows what the process does.
@Suite("macOS: a new CA's name costs no host-name lookup", .ownThreads)
struct CAHostNameTests {
    @Test("the default CA name is USER@ the first label of the kernel's host name (uname -n)")
    func defaultNameIsTheKernelsHostName() throws {
        let uname = try Subprocess.run(["uname", "-n"])
        let host = try #require(uname.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".").first)
        #expect(CertificateAuthority.defaultCommonName.hasSuffix("@\(host)"), "\(CertificateAuthority.defaultCommonName)")
    }

    /// Records, one line a call, the C library's name-lookup entry points a process reaches: those NSHost and
    /// swift-corelibs-foundation's Host use (getifaddrs, getnameinfo, getaddrinfo) and the older gethostby*.
    static let recorder = """
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <fcntl.h>
        #include <ifaddrs.h>
        #include <netdb.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/socket.h>
        #include <unistd.h>

        static void note(const char *call) {
            const char *log = getenv("TLS_FIXTURES_LOOKUP_LOG");
            if (log == NULL) return;
            int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
            if (fd < 0) return;
            (void)!write(fd, call, strlen(call));
            (void)!write(fd, "\\n", 1);
            close(fd);
        }
        #define NEXT(name) ((__typeof__(name) *)dlsym(RTLD_NEXT, #name))
        int getifaddrs(struct ifaddrs **list) { note("getifaddrs"); return NEXT(getifaddrs)(list); }
        int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **out) {
            note("getaddrinfo"); return NEXT(getaddrinfo)(node, service, hints, out);
        }
        int getnameinfo(const struct sockaddr *address, socklen_t length, char *host, socklen_t hostLength,
                        char *service, socklen_t serviceLength, int flags) {
            note("getnameinfo"); return NEXT(getnameinfo)(address, length, host, hostLength, service, serviceLength, flags);
        }
        struct hostent *gethostbyname(const char *name) { note("gethostbyname"); return NEXT(gethostbyname)(name); }
        struct hostent *gethostbyname2(const char *name, int family) {
            note("gethostbyname2"); return NEXT(gethostbyname2)(name, family);
        }
        struct hostent *gethostbyaddr(const void *address, socklen_t length, int type) {
            note("gethostbyaddr"); return NEXT(gethostbyaddr)(address, length, type);
        }
        """

    static let compiler: String? = {
        let found = try? Subprocess.run(["sh", "-c", "command -v cc || command -v clang || command -v gcc"])
        return found?.stdout.split(separator: "\n").first.map(String.init)
    }()

    @Test("tls-fixtures ca init makes its CA without one name-lookup call; the recorder sees getent's",
          .enabled(if: HostOS.current == .linux,
                   "interposes the C library with LD_PRELOAD (Darwin's Foundation looks names up by other paths)"),
          .enabled(if: compiler != nil, "needs a C compiler (cc, clang or gcc) for the recorder"))
    func caInitLooksUpNothing() throws {
        let folder = TestEnvironment.temporaryDirectory("lookups")
        let source = folder.appendingPathComponent("record.c")
        let library = folder.appendingPathComponent("librecord.so")
        let log = folder.appendingPathComponent("calls.log")
        try Self.recorder.write(to: source, atomically: true, encoding: .utf8)
        let compiler = try #require(Self.compiler)
        let built = try Subprocess.run([compiler, "-shared", "-fPIC", "-o", library.path, source.path, "-ldl"])
        try #require(built.status == 0, "\(built.combined)")
        var environment = ["LD_PRELOAD": library.path, "TLS_FIXTURES_LOOKUP_LOG": log.path]
        // Under make test-asan the CLI is instrumented, and ASan insists on being first in the preload order.
        if let asan = ProcessInfo.processInfo.environment["ASAN_OPTIONS"] {
            environment["ASAN_OPTIONS"] = asan + ":verify_asan_link_order=0"
        }
        func calls() -> [String] {
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        // The control: a lookup through the same harness is recorded.
        let control = try Subprocess.run(["getent", "ahosts", "localhost"], environment: environment)
        #expect(control.status == 0, "\(control.combined)")
        try #require(calls().contains("getaddrinfo"), "the recorder saw nothing of getent's lookup: \(calls())")
        try FileManager.default.removeItem(at: log)

        let store = folder.appendingPathComponent("store")
        let made = try TestEnvironment.tlsFixtures(["ca", "init", "--dir", store.path], environment: environment)
        #expect(made.status == 0, "\(made.combined)")
        #expect(FileManager.default.fileExists(atPath: store.appendingPathComponent("ca/root.pem").path), "\(made.combined)")
        #expect(calls().isEmpty, "making a CA looked up host names: \(calls())")
    }
}
