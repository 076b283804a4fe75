"""The live testbed's measurements as the calibration reads them: the typed run summary
(:mod:`calibration.testbed.summary`) and the fit of the local profile on one rate
(:mod:`calibration.testbed.fit`)."""
