// `import TLSFixtures` is the one import a test target or tool needs: every layer of the kit, re-exported. Each layer
// is its own target (Package.swift) so the compiler keeps the dependencies pointing down; users need not know that.
@_exported import TLSFixturesATS
@_exported import TLSFixturesFleet
@_exported import TLSFixturesNSC
@_exported import TLSFixturesOpenSSL
@_exported import TLSFixturesPKI
@_exported import TLSFixturesProbe
@_exported import TLSFixturesRunner
@_exported import TLSFixturesScenario
@_exported import TLSFixturesServer
@_exported import TLSFixturesWire
