import Foundation
import Testing
import TLSFixturesCLISupport

/// `tls-fixtures report --client TEMPLATE`: the words filled in for each fixture, and what a run of the command said,
/// which is what the card shows beside the fixture's records (the client matrix's cells are made of it).
@Suite("report --client: a command template, filled in for each fixture")
struct CommandLoadTests {
    static let proxy = URL(string: "http://localhost:9800")!

    @Test("each placeholder is filled in from the fixture's qualified URL; {scenario} is its scenario's name")
    func placeholders() throws {
        let command = try CommandLoad(template: "client --as {scenario}=::1 {host}:{port} {url} {resolve} {ca} {proxy}",
                                      caFile: "/tmp/ca.pem", proxy: Self.proxy)
        let words = command.arguments(for: URL(string: "https://ip-san.fixtures.test:40123/")!)
        #expect(words == ["client", "--as", "ip-san=::1", "ip-san.fixtures.test:40123", "https://localhost:40123/",
                          "ip-san.fixtures.test:40123:127.0.0.1", "/tmp/ca.pem", "http://localhost:9800"])
        // {scenario} says which fixture, not where it listens: a template needs one of the others too.
        #expect(throws: CommandLoadError.self) {
            try CommandLoad(template: "client {scenario}", caFile: "/tmp/ca.pem", proxy: Self.proxy)
        }
    }

    @Test("what the client said: its first line when it accepts too; the exit status and that line when it refuses")
    func said() async throws {
        let url = URL(string: "https://expired.fixtures.test:1/")!
        let accepting = try CommandLoad(template: "sh -c 'echo HTTP 200, TLSv1.3 on {port}; echo more'",
                                        caFile: "/tmp/ca.pem", proxy: Self.proxy)
        #expect(try await accepting.run(url) == "exit 0: HTTP 200, TLSv1.3 on 1")
        let silent = try CommandLoad(template: "sh -c 'exit 0' {url}", caFile: "/tmp/ca.pem", proxy: Self.proxy)
        #expect(try await silent.run(url) == "exit 0")
        // A blank first line is skipped; standard error counts as the client's words.
        let refusing = try CommandLoad(template: "sh -c 'echo; echo {scenario} on {port}: certificate has expired >&2; "
                                           + "exit 1'", caFile: "/tmp/ca.pem", proxy: Self.proxy)
        let refusal = await #expect(throws: CommandLoad.Refused.self) { try await refusing.run(url) }
        #expect(refusal?.status == 1 && refusal?.output == "expired on 1: certificate has expired",
                "\(String(describing: refusal))")
    }
}
