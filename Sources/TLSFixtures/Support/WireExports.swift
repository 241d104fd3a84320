// The values the control API carries and that a test sees in both worlds (`FixturePins`, `ATSExpectation`, …) live
// in TLSFixturesWire, a Foundation-only module that TLSFixturesClient shares; `import TLSFixtures` brings them along.
@_exported import TLSFixturesWire
