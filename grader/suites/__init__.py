"""The suites, the third stage: the hidden pytest suites run against a submission through a pytest plugin."""
