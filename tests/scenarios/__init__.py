"""Scripts the tests start as processes (ranks of a launch, a killed writer, a fresh Python); no tests here."""
