import TLSFixturesPKI

// `serve`'s ports are the catalog's (a port base plus fixed offsets), so the endpoints it publishes are named here,
// one layer above the PKI value they fill in.
extension RevocationEndpoints {
    /// What `serve` uses with `--port-base portBase`.
    public static func serve(portBase: Int = ScenarioCatalog.defaultPortBase, host: String = "localhost") -> RevocationEndpoints {
        RevocationEndpoints(host: host, responderPort: portBase + ScenarioCatalog.revocationResponderOffset,
                            refusingPort: portBase + ScenarioCatalog.refusingPortOffset)
    }

    /// `serve`'s endpoints at the default port base (9800): where the catalog's revocation leaves point.
    public static let serveDefault = RevocationEndpoints.serve()
}
